"""Factorized GRM fit with one imputation objective (rule fit_objective)."""

from pathlib import Path

from bayesirt import logs, records
from bayesirt.studies.rb_imputation import data, methods
from bayesirt.studies.rb_imputation.conditions import parse_condition

log = logs.to_file(snakemake.log[0])
wc = snakemake.wildcards
objective, copies = parse_condition(wc.condition)
# the objectives use one draw of the parameters per step (the config's n_draws is the reference's)
out = methods.fit(
    objective,
    data.read(snakemake.input.responses, snakemake.input.truth, snakemake.input.imputation),
    seed=snakemake.params.seed,
    config=methods.study_config(snakemake.params.settings, copies or 1),
    fields={"dataset": wc.dataset, "missing": wc.missing, "replication": int(wc.rep)},
)
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
records.write_fit(out, Path(snakemake.output.record).parent)
