"""Tables and figures of one amortized_ifa design from all its fits (rules ifa_*_tables)."""

from bayesirt import io, logs
from bayesirt.studies import amortized_ifa

log = logs.to_file(snakemake.log[0])
attrs = io.read_json(snakemake.input.sidecar).get("attrs", {})
tables = amortized_ifa.aggregate_design(snakemake.input.fits, snakemake.params.design, attrs)
amortized_ifa.write_aggregate(tables, dict(snakemake.output.items()))
log.info("%s: %d fits aggregated", snakemake.wildcards.design, len(tables["fits"]))
