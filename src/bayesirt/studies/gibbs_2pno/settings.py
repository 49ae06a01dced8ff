"""The gibbs_2pno study's config: the checks across keys that the schema cannot express, and the
settings of its samplers, read once from the validated config (no JAX: Snakemake imports this
module when it parses the workflow).

Defaults live in ``workflow/schemas/config.schema.yaml`` only: after validation every key
below is present, so it is read as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bayesirt.config import ConfigError
from bayesirt.studies.design_checks import check_hidden_cells, checked_missing
from bayesirt.studies.gibbs_2pno.conditions import STUDY, study_config

# NUTS's sampler keeps every draw and runs its chains in one process; the config gives only
# its chains, warm-up and draws (``studies.gibbs_2pno.nuts``)
NUTS_THIN, NUTS_CHUNK, NUTS_CHAIN_PROCESSES = 1, 500, 1


def check(config: dict) -> None:
    """Raise ConfigError naming the first offending key of the study's section: a design's
    ``dataset`` that is not a data set of the config, a missingness name that does not parse
    (``mcar150``, ``mar0``), or missingness a simulated design's size cannot hold (injection
    keeps one response of every person and item). Called after the schema filled in the
    defaults."""
    study = config["studies"].get(STUDY)  # an optional section: no default, absent means unchecked
    if not study:
        return
    datasets = config["datasets"]
    for name, design in study["designs"].items():
        ds = design.get("dataset")  # a simulated design names none
        if ds is not None and ds not in datasets:
            raise ConfigError(
                f"config key 'studies.gibbs_2pno.designs.{name}.dataset': '{ds}' is not one of the "
                f"data sets {sorted(datasets)}"
            )
    for name, design in study["designs"].items():
        for i, missing in enumerate(design["missing"]):
            key = f"studies.gibbs_2pno.designs.{name}.missing.{i}"
            _, rate = checked_missing(key, missing)
            if "dataset" not in design:  # a real data set's size is known only once it is read
                check_hidden_cells(key, missing, rate, int(design["n_persons"]), int(design["n_items"]), "the design")


@dataclass(frozen=True)
class Sampler:
    """One Markov chain sampler's settings (``inference.samplers.sampling.SamplerSettings`` less its
    progress logging, which the study switches off)."""

    n_chains: int
    n_warmup: int
    n_samples: int
    thin: int
    chunk: int
    chain_processes: int

    @classmethod
    def from_config(cls, block: dict) -> Sampler:
        """From a ``gibbs_sampler`` block of the schema (``gibbs``, ``mixture.sampler``)."""
        return cls(
            int(block["n_chains"]),
            int(block["n_warmup"]),
            int(block["n_samples"]),
            int(block["thin"]),
            int(block["chunk"]),
            int(block["chain_processes"]),
        )

    @property
    def threads(self) -> int:
        """Cores a fit job uses: one per chain process, at most one per chain."""
        return min(self.chain_processes, self.n_chains)


@dataclass(frozen=True)
class Mixture:
    """The mixture example: the heights simulated (two groups, one known sd), the priors of
    ``inference.samplers.gibbs_mixture.MixturePriors`` (but its precision, 1 / sd^2) and the sampler."""

    n_women: int
    n_men: int
    mean_women: float
    mean_men: float
    sd: float
    priors: dict  # nu, rho, alpha, beta
    sampler: Sampler

    @classmethod
    def from_config(cls, block: dict) -> Mixture:
        return cls(
            block["n_women"],
            block["n_men"],
            block["mean_women"],
            block["mean_men"],
            block["sd"],
            dict(block["priors"]),
            Sampler.from_config(block["sampler"]),
        )


@dataclass(frozen=True)
class Settings:
    """What the study's fits need from the config: the 2PNO priors (``models.twopno.Priors``
    keyword arguments, as written), the Gibbs and NUTS samplers, the mixture example, and each
    design's ``block_size`` (replications of a condition fitted together in one job; science
    config: every record keeps it)."""

    priors: dict
    gibbs: Sampler
    nuts: Sampler
    mixture: Mixture
    block_sizes: dict = field(default_factory=dict)  # design -> block_size

    def block_size(self, design: str) -> int:
        """The design's ``block_size`` (the validated config's: the schema gives its default)."""
        if design not in self.block_sizes:
            raise KeyError(f"gibbs_2pno has no design '{design}' in the config (designs: {sorted(self.block_sizes)})")
        return self.block_sizes[design]

    @classmethod
    def from_config(cls, config: dict) -> Settings:
        """From the whole validated config (the study must be in it)."""
        study = config["studies"][STUDY]
        nuts = study["nuts"]
        return cls(
            dict(study["priors"]),
            Sampler.from_config(study["gibbs"]),
            Sampler(
                int(nuts["n_chains"]),
                int(nuts["n_warmup"]),
                int(nuts["n_samples"]),
                NUTS_THIN,
                NUTS_CHUNK,
                NUTS_CHAIN_PROCESSES,
            ),
            Mixture.from_config(study["mixture"]),
            {name: int(d["block_size"]) for name, d in study["designs"].items()},
        )


def block_key(design: str) -> str:
    """The config key of a design's block size, named when a block does not fit in memory."""
    return f"studies.{STUDY}.designs.{design}.block_size"


def fit_threads(config: dict, method: str) -> int:
    """Cores the fit job of one method uses: the Gibbs sampler's ``chain_processes`` (capped at
    its chains), else 1 (parse time: the rules' ``threads``)."""
    if method not in ("gibbs", "gibbs_omit", "gibbs_seed") or not study_config(config):
        return 1
    return Sampler.from_config(config["studies"][STUDY]["gibbs"]).threads
