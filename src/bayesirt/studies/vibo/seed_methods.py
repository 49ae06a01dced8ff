"""Seed 004's own VIBO, as the seed writes it, beside this project's variants.

Two methods carry the seed's name:

* ``vibo_seed``: the seed's encoder, a product of one Gaussian expert per response in which a
  missing response's expert "is replaced with the prior" (``inference.variational.vibo``, missing
  ``prior_per_missing``: no prior expert when nothing is missing), with the seed's priors and
  its single reparameterized sample;
* ``vibo_average_seed``: the design the seed compares it with, "averaging over non-missing
  entries" (``inference.variational.vibo_average``), with everything else the same.

The settings the seed states sit in ``SEED_SETTINGS`` below, each with its words; the table
``docs/reproduction/data/vibo/seed_settings.yaml`` points at them and a test holds the two
together. What the seed leaves open, it leaves open in so many words (the draft's own note:
"need to say what optimization algorithm was used, and when we decided to stop optimizing"):
the optimizer, learning rate and its schedule, batch size, stopping rule and number of steps,
the networks' widths and the starting values. For those the seed methods run with this
project's choices for VIBO, the study's ``training`` and ``vibo`` config blocks (Adam with
exponential decay, minibatches of persons, windowed-mean stopping, experts of 16 x 16), so
that the seed methods and ours differ only in what the seed states.

Three readings of ours, said here once: the item KL enters a minibatch with weight |B|/N (the
seed states its bound per person; summed over persons, the joint evidence bound counts the
item KL once, ``inference.variational.vibo``); "p(d_j) N(0, 1)" is applied to every unconstrained value of
an item (log-discrimination and difficulty of the 2PL, first cut and log gaps of the GRM,
which the seed, a 1PL note, does not have); and each product of experts has a precision floor
of 1e-4 (``vibo_encoder.MIN_PRECISION``) that keeps it proper.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from types import ModuleType

from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import vibo, vibo_average
from bayesirt.models import irt2pl


@dataclass(frozen=True)
class SeedSettings:
    """The settings seed 004 states for VIBO (section "VIBO")."""

    missing: str
    n_samples: int
    item_prior_mean: float
    item_prior_sd: float


SEED_SETTINGS = SeedSettings(
    # "If item j is missing, we replace its term in the product with the prior"
    missing="prior_per_missing",
    # "estimating the gradients ... with a single sample is sufficient"
    n_samples=1,
    # "the prior distributions are chosen to be independent standard Normal distributions"
    item_prior_mean=0.0,
    item_prior_sd=1.0,
)

# the study's methods that run the seed's settings, and the module of each one's encoder
ENCODERS: dict[str, ModuleType] = {"vibo_seed": vibo, "vibo_average_seed": vibo_average}


def item_priors(seed: SeedSettings = SEED_SETTINGS) -> irt2pl.ItemPriors:
    """The seed's prior on the items: N(mean, sd) on every unconstrained item value (the GRM's
    first cut and log gaps too: this project's reading, the seed has no GRM)."""
    m, s = seed.item_prior_mean, seed.item_prior_sd
    blocks = ("difficulty", "log_discrimination", "first_cut", "log_gap")
    return irt2pl.ItemPriors(**{f"{b}_mean": m for b in blocks}, **{f"{b}_sd": s for b in blocks})


# the item prior every seed method fits with (``methods.prepare``)
SEED_ITEM_PRIORS = item_priors()


def vibo_settings(hidden, train: TrainSettings, seed: SeedSettings = SEED_SETTINGS) -> vibo.VIBOSettings:
    """What a seed method fits with: the seed's priors, missing-response expert and samples;
    the widths ``hidden`` and the training ``train`` are the study's (the seed leaves them open).
    The averaging encoder does not read ``missing`` (a missing response is not in its average)."""
    priors = SEED_ITEM_PRIORS if seed == SEED_SETTINGS else item_priors(seed)
    return vibo.VIBOSettings(priors, missing=seed.missing, hidden=tuple(hidden), n_samples=seed.n_samples, train=train)


def encoder_module(method: str) -> ModuleType:
    """The inference module of a VIBO method's encoder (``inference.variational.vibo`` but for the seed's
    averaging comparison)."""
    return ENCODERS.get(method, vibo)


def method_record(method: str, config: dict) -> dict:
    """The method's settings as its fit record keeps them: the config block, and for a seed
    method the seed's settings it runs with beside it (the averaging encoder has no expert of a
    missing response, so no ``missing``)."""
    if method not in ENCODERS:
        return config
    seed = asdict(SEED_SETTINGS)
    if ENCODERS[method] is vibo_average:
        del seed["missing"]
    return {**config, "seed": seed}
