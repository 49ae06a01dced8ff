"""Recovery table and figures of a data set's fits (rule recovery_table)."""

import pandas as pd

from bayesirt import io, logs, plotting
from bayesirt.evaluation.recovery import recovery_table

log = logs.to_file(snakemake.log[0])
estimates = pd.read_csv(snakemake.input.estimates)
record = io.read_json(snakemake.input.record)
if "true" in estimates:
    table = recovery_table(estimates)
else:
    log.info("no true values (real data): recovery table left empty")
    table = pd.DataFrame(columns=["parameter", "scale", "rmse", "bias", "mse", "corr", "n"])
table.insert(0, "fit", record["condition"])
io.write_table(table, snakemake.output.table)
losses = {record["condition"]: pd.read_csv(snakemake.input.loss)}
plotting.save(plotting.loss_curves(losses), snakemake.output.loss_figure)
if "true" in estimates:
    figure = plotting.true_vs_estimated(estimates)
else:
    figure = plotting.item_estimates(estimates)
plotting.save(figure, snakemake.output.scatter_figure)
