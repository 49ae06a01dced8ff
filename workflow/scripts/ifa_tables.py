"""Tables and figures of one amortized_ifa design from all its fits (rules ifa_*_tables)."""

from bayesirt import io, logs
from bayesirt.studies.amortized_ifa import aggregate

log = logs.to_file(snakemake.log[0])
attrs = io.read_json(snakemake.input.sidecar).get("attrs", {})
tables = aggregate.aggregate_design(snakemake.input.fits, snakemake.params.design, attrs)
for name, table in tables.items():  # timings.csv is the only run-dependent table
    if name in snakemake.output.keys():
        io.write_table(table, snakemake.output[name])
aggregate.figures(tables, dict(snakemake.output.items()))
log.info("%s: %d fits aggregated", snakemake.wildcards.design, len(tables["fits"]))
