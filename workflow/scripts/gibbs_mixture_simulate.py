"""Heights-like data of seed 001's two-component mixture example (rule gibbs_mixture_simulate)."""

from bayesirt import io, logs
from bayesirt.studies import gibbs_2pno

log = logs.to_file(snakemake.log[0])
cfg = snakemake.params.mixture
data = gibbs_2pno.simulate_mixture(cfg, snakemake.params.seed)
io.write_table(data, snakemake.output.data)
log.info("mixture: %d women + %d men, seed %d", cfg["n_women"], cfg["n_men"], snakemake.params.seed)
