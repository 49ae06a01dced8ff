"""Tables and figures of the dcm_bbvi study from all its fits (rule dcm_bbvi_tables: the fit
records, in their blocks' folders, are its params)."""

from bayesirt import io, logs
from bayesirt.studies.dcm_bbvi import figures, oracle, tables

log = logs.to_file(snakemake.log[0])
tabs = tables.aggregate(snakemake.params.fits)
tabs["oracle"] = oracle.oracle_table(snakemake.params.datasets, snakemake.input.responses, snakemake.input.truths)
for name, table in tabs.items():
    io.write_table(table, snakemake.output[name])
figures.figures(tabs, dict(snakemake.output.items()))
log.info("dcm_bbvi: %d fits aggregated", len(tabs["fits"]))
