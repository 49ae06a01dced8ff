"""Factorized GRM fit with one imputation objective (rule fit_objective)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records
from bayesirt.imputation import stacking
from bayesirt.inference.training import TrainSettings
from bayesirt.models.factorized_grm import Priors
from bayesirt.studies import rb_imputation

log = logs.to_file(snakemake.log[0])
wc = snakemake.wildcards
objective, copies = rb_imputation.parse_condition(wc.condition)
training = dict(snakemake.params.training)
training.pop("n_draws")  # the objectives use one draw of the parameters per step
config = rb_imputation.StudyConfig(n_copies=copies or 1, n_dimensions=snakemake.params.n_dimensions,
                                   settings=TrainSettings(**training), priors=Priors(**snakemake.params.priors))
out = rb_imputation.fit_objective(
    io.read_responses(snakemake.input.responses), stacking.load(snakemake.input.imputation), objective,
    seed=snakemake.params.seed, config=config,
    truth=pd.read_csv(snakemake.input.truth) if snakemake.input.truth else None,
    posterior_draws=snakemake.params.posterior_draws,
    fields={"dataset": wc.dataset, "missing": wc.missing, "replication": int(wc.rep)})
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
records.write_fit(out, Path(snakemake.output.record).parent)
