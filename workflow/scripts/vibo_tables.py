"""Tables and figures of one vibo design from all its fits: rule vibo_tables (simulated designs,
against the truth) and rule vibo_observed_tables (params.observed: real data, no truth, the
methods compared with each other)."""

import pandas as pd

from bayesirt import io, logs
from bayesirt.studies import vibo

log = logs.to_file(snakemake.log[0])
observed = getattr(snakemake.params, "observed", False)
fit_records = [io.read_json(p) for p in snakemake.input.fits]
estimates = [pd.read_csv(p) for p in snakemake.input.estimates]
tables = (vibo.aggregate_observed if observed else vibo.aggregate)(fit_records, estimates)
for name, table in tables.items():  # timings.csv is the run-dependent table
    io.write_table(table, snakemake.output[name])
(vibo.observed_figures if observed else vibo.figures)(tables, dict(snakemake.output.items()))
log.info("%s: %d fits aggregated%s", snakemake.wildcards.design, len(fit_records),
         " (real data, no truth: methods compared with each other)" if observed else "")
