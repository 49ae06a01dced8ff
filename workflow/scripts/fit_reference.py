"""Complete-data factorized GRM fit by mean-field ADVI (rule fit_reference)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records
from bayesirt.inference.training import TrainSettings
from bayesirt.models.factorized_grm import Priors
from bayesirt.studies import rb_imputation

log = logs.to_file(snakemake.log[0])
training = dict(snakemake.params.training)
n_draws = training.pop("n_draws")
config = rb_imputation.StudyConfig(n_dimensions=snakemake.params.n_dimensions, settings=TrainSettings(**training),
                                   priors=Priors(**snakemake.params.priors))
out = rb_imputation.fit_reference(
    io.read_responses(snakemake.input.responses), seed=snakemake.params.seed, config=config,
    truth=pd.read_csv(snakemake.input.truth) if snakemake.input.truth else None, n_draws=n_draws,
    posterior_draws=snakemake.params.posterior_draws, fields={"dataset": snakemake.wildcards.dataset})
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
records.write_fit(out, Path(snakemake.output.record).parent)
