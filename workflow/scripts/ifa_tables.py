"""Tables and figures of one amortized_ifa design from all its fits (rules ifa_*_tables)."""

from bayesirt import ifa_study, io, logs

log = logs.to_file(snakemake.log[0])
attrs = io.read_json(snakemake.input.sidecar).get("attrs", {})
tables = ifa_study.aggregate_design(snakemake.input.fits, snakemake.params.design, attrs)
ifa_study.write_aggregate(tables, dict(snakemake.output.items()))
log.info("%s: %d fits aggregated", snakemake.wildcards.design, len(tables["fits"]))
