"""Heights-like data of seed 001's two-component mixture example (rule gibbs_mixture_simulate)."""

from bayesirt import io, logs
from bayesirt.studies.gibbs_2pno.data import simulate_mixture
from bayesirt.studies.gibbs_2pno.settings import Settings

log = logs.to_file(snakemake.log[0])
mixture = Settings.from_config(snakemake.config).mixture
data = simulate_mixture(mixture, snakemake.params.seed)
io.write_table(data, snakemake.output.data)
log.info("mixture: %d women + %d men, seed %d", mixture.n_women, mixture.n_men, snakemake.params.seed)
