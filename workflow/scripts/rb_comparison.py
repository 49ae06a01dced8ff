"""Compare every imputation objective with the complete-data reference (rule rb_comparison)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, plotting
from bayesirt.studies import rb_imputation

log = logs.to_file(snakemake.log[0])
reference = pd.read_csv(snakemake.input.reference)
reference_record = io.read_json(snakemake.input.reference_record)

timings = []  # wall times vary run to run: a file of their own, so the rest compares bit for bit
tables, rows, first_rep = [rb_imputation.error_table(reference, None).assign(condition="reference", rep=-1)], [], {}
for record_path in snakemake.input.fits:
    folder = Path(record_path).parent
    record = io.read_json(record_path)
    estimates = pd.read_csv(folder / "estimates.csv")
    table = rb_imputation.error_table(estimates, reference).assign(condition=record["condition"], rep=record["replication"])
    tables.append(table)
    overall = table[table.scale == "all"].set_index(["against", "parameter"])
    row = {"condition": record["condition"], "objective": record["objective"], "n_copies": record.get("n_copies"),
           "rep": record["replication"], "converged": record["converged"], "steps": record["steps"],
           "elbo": record["elbo"]}
    timings.append({"condition": record["condition"], "rep": record["replication"], "steps": record["steps"],
                    **record["timing"], "seconds_per_step": record["timing"]["wall_seconds"] / record["steps"]})
    for (against, parameter), r in overall.iterrows():
        row[f"{parameter}_rmse_vs_{against}"] = r["rmse"]
    rows.append(row)
    if record["replication"] == 0:
        first_rep[record["condition"]] = (estimates, pd.read_csv(folder / "loss.csv"))

errors = pd.concat(tables, ignore_index=True)
summary = pd.DataFrame(rows)
aggregate = rb_imputation.aggregate([errors.assign(objective=errors["condition"])]).rename(columns={"objective": "condition"})
imputation = pd.DataFrame([{"rep": r["replication"], **r["scores"]}  # timings stay in imputation.json
                           for r in map(io.read_json, snakemake.input.imputation)])
io.write_table(errors, snakemake.output.errors)
io.write_table(summary, snakemake.output.summary)
io.write_table(aggregate, snakemake.output.aggregate)
io.write_table(imputation, snakemake.output.imputation)
io.write_table(pd.DataFrame(timings), snakemake.output.timings)

estimates = {"reference": reference, **{c: e for c, (e, _) in first_rep.items()}}
losses = {c: loss for c, (_, loss) in first_rep.items()}
losses = {"reference": pd.read_csv(Path(snakemake.input.reference).parent / "loss.csv"), **losses}
plotting.save(plotting.loss_curves(losses), snakemake.output.loss_figure)
plotting.save(plotting.estimates_by_condition(estimates, "discrimination"), snakemake.output.discrimination_figure)
plotting.save(plotting.abilities_against_reference(estimates), snakemake.output.ability_figure)
plotting.save(plotting.errors_by_condition(errors[errors.condition != "reference"]), snakemake.output.error_figure)
log.info("compared %d fits over %d replications", len(rows), summary["rep"].nunique() if len(rows) else 0)
