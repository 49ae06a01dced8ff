"""Tables and figures of one amortized_ifa design from all its fits (rules ifa_*_tables: the fit
records, in their blocks' folders, are their params)."""

from bayesirt import io, logs
from bayesirt.studies.amortized_ifa import figures, settings, tables

log = logs.to_file(snakemake.log[0])
design = settings.Settings.from_config(snakemake.config).design(snakemake.wildcards.design)
attrs = io.read_json(snakemake.input.sidecar).get("attrs", {})
out = tables.aggregate(snakemake.params.fits, design, attrs)
for name, table in out.items():  # timings.csv is the only run-dependent table
    if name in snakemake.output.keys():
        io.write_table(table, snakemake.output[name])
figures.figures(out, dict(snakemake.output.items()))
log.info("%s: %d fits aggregated", snakemake.wildcards.design, len(out["fits"]))
