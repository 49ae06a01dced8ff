"""Fit, check and score the stacking imputation model (rule fit_imputation_model)."""

import time

from bayesirt import io, logs
from bayesirt.data import missingness
from bayesirt.imputation import stacking
from bayesirt.studies.rb_imputation import data

log = logs.to_file(snakemake.log[0])
rm_missing = io.read_responses(snakemake.input.responses)
rm_complete = io.read_responses(snakemake.input.complete)
hidden = missingness.read_hidden(snakemake.input.hidden, rm_missing)
settings = stacking.StackingSettings(**snakemake.params.settings, seed=snakemake.params.seed)
t0 = time.perf_counter()
model, checks = data.fit_imputation_model(rm_missing, settings)
seconds = time.perf_counter() - t0
scores = data.imputation_scores(model, rm_missing, rm_complete, hidden)
log.info(
    "imputation model: %d sub-models in %.1f s; hidden cells: log score %.3f (marginal %.3f), "
    "accuracy %.3f (marginal %.3f)",
    model.weights.size,
    seconds,
    scores["log_score"],
    scores["marginal_log_score"],
    scores["accuracy"],
    scores["marginal_accuracy"],
)
io.write_table(stacking.summary_table(model), snakemake.output.submodels)
stacking.save(model, snakemake.output.model)
io.write_json(
    {
        "study": "rb_imputation",
        "dataset": snakemake.wildcards.dataset,
        "missing": snakemake.wildcards.missing,
        "replication": int(snakemake.wildcards.rep),
        "seed": snakemake.params.seed,
        "checks": checks,
        "scores": scores,
        "versions": io.library_versions(),
        "timing": {"fit_seconds": seconds, **{k: v for k, v in model.info.items() if k.endswith("_seconds")}},
    },
    snakemake.output.record,
)
