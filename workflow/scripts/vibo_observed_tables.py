"""Tables and the figure of one real-data vibo design (no truth) from all its fits (rule
vibo_observed_tables)."""

import pandas as pd

from bayesirt import io, logs
from bayesirt.studies import vibo

log = logs.to_file(snakemake.log[0])
fit_records = [io.read_json(p) for p in snakemake.input.fits]
estimates = [pd.read_csv(p) for p in snakemake.input.estimates]
tables = vibo.aggregate_observed(fit_records, estimates)
for name, table in tables.items():  # timings.csv is the run-dependent table
    io.write_table(table, snakemake.output[name])
vibo.observed_figures(tables, dict(snakemake.output.items()))
log.info("%s: %d fits of real data aggregated (no truth: methods compared with each other)",
         snakemake.wildcards.design, len(fit_records))
