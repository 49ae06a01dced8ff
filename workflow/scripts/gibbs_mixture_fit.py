"""The two-component mixture by its Gibbs sampler, its posterior table and figure (rule fit_gibbs_mixture)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records, runtime
from bayesirt.studies.gibbs_2pno.conditions import MixtureCondition
from bayesirt.studies.gibbs_2pno.settings import Settings

log = logs.to_file(snakemake.log[0])
runtime.use_library_reductions()  # a Gibbs sampler only: see bayesirt.runtime
# the fitting code (JAX) after the XLA flag above is set
from bayesirt.studies.gibbs_2pno import figures, methods  # noqa: E402  (JAX reads the setting above)

settings, out_files = Settings.from_config(snakemake.config), snakemake.output
data = pd.read_csv(snakemake.input.data)
out = methods.fit(data, None, MixtureCondition(), settings, seed=snakemake.params.seed)
records.write_fit(out, Path(out_files.record).parent)
io.write_table(out.estimates, out_files.table)
figures.mixture_figure(data, settings.mixture.sd, out_files.posterior, out_files.figure)
log.info("mixture: %s", out.record["convergence_reason"])
