"""Factorized GRM fit with one imputation objective (rule fit_objective)."""

import re
from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records
from bayesirt.studies import rb_imputation
from bayesirt.imputation import stacking
from bayesirt.inference.training import TrainSettings
from bayesirt.models.factorized_grm import Priors

log = logs.to_file(snakemake.log[0])
wc = snakemake.wildcards
objective, copies = re.fullmatch(r"([a-z_]+?)(?:_M(\d+))?", wc.condition).groups()
training = dict(snakemake.params.training)
training.pop("n_draws")  # the objectives use one draw of the parameters per step
config = rb_imputation.StudyConfig(n_copies=int(copies or 1), n_dimensions=snakemake.params.n_dimensions,
                              settings=TrainSettings(**training),
                              priors=Priors(**snakemake.params.priors))
rm_missing = io.read_responses(snakemake.input.responses)
truth = pd.read_csv(snakemake.input.truth) if snakemake.input.truth else None
out = rb_imputation.fit_objective(
    rm_missing, stacking.load(snakemake.input.imputation), objective, seed=snakemake.params.seed,
    config=config, truth=truth, posterior_draws=snakemake.params.posterior_draws,
    meta={"dataset": wc.dataset, "condition": wc.condition, "missing": wc.missing,
          "replication": int(wc.rep), "label": f"{wc.condition} rep{wc.rep}"})
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
records.write_fit(out, Path(snakemake.output.record).parent)
