"""Tables and figures of one vibo design from all its fits: rule vibo_tables (simulated designs,
against the truth) and rule vibo_observed_tables (params.observed: real data, no truth, the
methods compared with each other). The fits' files, in their blocks' folders, are the rules' params."""

import pandas as pd

from bayesirt import io, logs
from bayesirt.studies.vibo import figures, tables

log = logs.to_file(snakemake.log[0])
observed = getattr(snakemake.params, "observed", False)
fit_records = [io.read_json(p) for p in snakemake.params.fits]
estimates = [pd.read_csv(p) for p in snakemake.params.estimates]
result = tables.aggregate(fit_records, estimates, observed=observed)
for name, table in result.items():  # timings.csv is the run-dependent table
    io.write_table(table, snakemake.output[name])
figures.figures(result, dict(snakemake.output.items()), observed=observed)
log.info(
    "%s: %d fits aggregated%s",
    snakemake.wildcards.design,
    len(fit_records),
    " (real data, no truth: methods compared with each other)" if observed else "",
)
