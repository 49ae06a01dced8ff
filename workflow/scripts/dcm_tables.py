"""Tables and figures of the dcm_bbvi study from all its fits (rule dcm_bbvi_tables)."""

from bayesirt import io, logs
from bayesirt.studies import dcm_bbvi

log = logs.to_file(snakemake.log[0])
tables = dcm_bbvi.aggregate(snakemake.input.fits)
for name, table in tables.items():
    io.write_table(table, snakemake.output[name])
dcm_bbvi.figures(tables, dict(snakemake.output.items()))
log.info("dcm_bbvi: %d fits aggregated", len(tables["fits"]))
