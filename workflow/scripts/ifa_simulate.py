"""Simulate one replication of an amortized_ifa design: training and held-out persons, truth
(rule ifa_simulate)."""

from bayesirt import io, logs
from bayesirt.studies.amortized_ifa import data, settings

log = logs.to_file(snakemake.log[0])
study = settings.Settings.from_config(snakemake.config)
train, holdout, truth = data.simulate_design(
    study.design(snakemake.wildcards.design),
    snakemake.params.seed,
    study.evaluation.heldout_fraction,
    parameter_seed=snakemake.params.parameter_seed,
)
for part in (train, holdout):
    part.attrs.update({"design": snakemake.wildcards.design, "replication": int(snakemake.wildcards.rep)})
io.write_table(truth, snakemake.output.truth)
io.write_responses(holdout, snakemake.output.holdout)
io.write_responses(train, snakemake.output.responses)
log.info(
    "simulated %s rep %s: %d training + %d held-out persons x %d items, seed %d",
    snakemake.wildcards.design,
    snakemake.wildcards.rep,
    train.n_persons,
    holdout.n_persons,
    train.n_items,
    snakemake.params.seed,
)
