"""Recovery table and figures of the complete-data reference fit (rule recovery_table)."""

import pandas as pd

from bayesirt import io, logs
from bayesirt.studies.rb_imputation import figures, tables

log = logs.to_file(snakemake.log[0])
estimates = pd.read_csv(snakemake.input.estimates)
record = io.read_json(snakemake.input.record)
if "true" not in estimates:
    log.info("no true values (real data): recovery table left empty")
io.write_table(tables.recovery(estimates, record["condition"]), snakemake.output.table)
figures.reference_figures(
    estimates, {record["condition"]: pd.read_csv(snakemake.input.loss)}, dict(snakemake.output.items())
)
