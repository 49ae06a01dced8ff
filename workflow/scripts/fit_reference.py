"""Complete-data factorized GRM fit by mean-field ADVI (rule fit_reference)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records
from bayesirt.inference.training import TrainSettings
from bayesirt.models.factorized_grm import Priors

log = logs.to_file(snakemake.log[0])
rm = io.read_responses(snakemake.input.responses)
truth = pd.read_csv(snakemake.input.truth) if snakemake.input.truth else None
training = dict(snakemake.params.training)
n_draws = training.pop("n_draws")
out = records.fit_factorized_grm(
    rm, seed=snakemake.params.seed, settings=TrainSettings(**training),
    priors=Priors(**snakemake.params.priors), n_draws=n_draws,
    posterior_draws=snakemake.params.posterior_draws, truth=truth, n_dimensions=snakemake.params.n_dimensions,
    meta={"study": "rb_imputation", "dataset": snakemake.wildcards.dataset,
          "condition": "reference", "objective": "complete", "replication": None,
          "label": f"reference {snakemake.wildcards.dataset}"})
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
records.write_fit(out, Path(snakemake.output.record).parent)
