"""The two-component mixture by its Gibbs sampler, its posterior table and figure (rule fit_gibbs_mixture)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records, runtime
from bayesirt.studies import gibbs_2pno

log = logs.to_file(snakemake.log[0])
runtime.use_library_reductions()  # a Gibbs sampler only: see bayesirt.runtime
cfg, out_files = snakemake.params.mixture, snakemake.output
data = pd.read_csv(snakemake.input.data)
out = gibbs_2pno.run_mixture(data, cfg, snakemake.params.seed)
records.write_fit(out, Path(out_files.record).parent)
io.write_table(out.estimates, out_files.table)
gibbs_2pno.mixture_figure(data, cfg, out_files.posterior, out_files.figure)
log.info("mixture: %s", out.record["convergence_reason"])
