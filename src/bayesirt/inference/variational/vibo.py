"""VIBO (seed 004): amortized variational IRT with a product-of-experts ability encoder.

Objective (the seed's theorem), per person i, with q(d) a mean-field Gaussian over the
unconstrained item values (``models.irt2pl``, ``vibo_items``) and q(a_i | d, r_i) the encoder
(``vibo_encoder``):

    VIBO_i = E_q(d) q(a_i|d,r_i)[log p(r_i | a_i, d)] - E_q(d)[KL(q(a_i | d, r_i) || N(0, I))]
    VIBO   = sum_i VIBO_i - KL(q(d) || p(d))

The loss handed to the training driver for a batch B of persons is the per-person mean

    loss(B) = (1/|B|) sum_{i in B} -VIBO_i(d) + KL(q(d) || p(d)) / N,

so its expectation over batches (drawn without replacement, every person equally likely) is
exactly -VIBO / N: the item KL enters each batch with weight |B|/N relative to the batch's sum,
and over an epoch it is counted once. (Adding the full item KL to every batch would count it
N/|B| times per epoch and shrink the items toward their prior.) Gradients are reparameterized
with ``n_samples`` draws (default 1) of d, shared by the batch, and of a_i per person; both
KL terms are closed-form Gaussian KLs. The draw of a_i uses a key folded with the person's row
number, so a person's contribution does not depend on which batch it falls in.

Encoder: one Gaussian expert per *observed* response, an MLP of the item's (sampled) values and
the response, multiplied into a Gaussian (``vibo_encoder``). Missing responses (``missing``):

* ``"one_prior"`` (a): no expert for a missing response; exactly one N(0, I) prior expert, so
  the pull toward the prior does not grow with the number of missing answers;
* ``"prior_per_missing"`` (b, the seed's variant): each missing response's expert is replaced
  by the prior N(0, I), i.e. a prior expert per missing response (none when nothing is missing).

The objective and the driver's fit (``vibo_objective``) and the programs that use a fit
(``vibo_programs``) are written for any encoder ``encoder(encoder_params, items, y, st,
settings) -> (mean, sd)``; this module passes the product of experts, ``vibo_average`` its
averaging encoder.

``log_ratios``: log p(y, d, a) - log q(d) q(a | d, r) of joint draws of the fit (items and every
person's ability), the input of its PSIS k-hat (``inference.variational.psis``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.training import FitResult, Problem, TrainSettings, keep_last_good, train_problem
from bayesirt.inference.variational import networks, vibo_programs
from bayesirt.inference.variational.vibo_encoder import n_item_features, product_of_experts
from bayesirt.inference.variational.vibo_items import init_items
from bayesirt.inference.variational.vibo_objective import encoder_problem
from bayesirt.models import irt2pl

MISSING_VARIANTS = ("one_prior", "prior_per_missing")


@dataclass(frozen=True)
class VIBOSettings:
    """Settings of :func:`fit` (the model's structure, ``irt2pl.Structure``, is its own argument)."""

    priors: irt2pl.ItemPriors = irt2pl.ItemPriors()
    missing: str = "one_prior"
    hidden: tuple = (16, 16)  # widths of the expert MLP's hidden layers
    n_samples: int = 1  # reparameterized draws per step
    init_item_scale: float = 0.05  # initial sd of q(d)
    train: TrainSettings = field(default_factory=TrainSettings)

    def __post_init__(self):
        if self.missing not in MISSING_VARIANTS:
            raise ValueError(f"vibo missing '{self.missing}' is not known; expected one of {list(MISSING_VARIANTS)}")
        if self.n_samples < 1:
            raise ValueError(f"vibo n_samples must be at least 1, got {self.n_samples}")
        if any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"vibo hidden widths must be positive, got {list(self.hidden)}")


def init(key, st: irt2pl.Structure, settings: VIBOSettings, y) -> dict:
    """Initial variational parameters: q(d) at data-based starting values with sd
    ``init_item_scale``, and the expert MLP.

    Parameters
    ----------
    key : jax.Array
        PRNG key of the expert MLP.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        Hidden widths and ``init_item_scale``.
    y : array (N, J)
        Responses, -1 for missing (for ``irt2pl.initial_items``).

    Returns
    -------
    dict
        ``{"items": {"loc", "log_scale"}, "encoder"}``: q(d)'s means and log sds by item block,
        and the expert MLP with widths (F + C, *hidden, 2 K), F = ``n_item_features(st)``.
    """
    sizes = [n_item_features(st) + st.n_categories_max, *map(int, settings.hidden), 2 * st.n_factors]
    items = init_items(y, st, settings.init_item_scale)
    return {"items": items, "encoder": networks.init_mlp(key, sizes, scale_last=0.1)}


_init = init  # for ``problem``, whose keyword ``init`` hides the function


def problem(
    key,
    y,
    structure: irt2pl.Structure,
    settings: VIBOSettings = VIBOSettings(),
    *,
    init: dict | None = None,
    label: str = "vibo",
) -> Problem:
    """VIBO's fit of responses ``y``, ready for the training driver.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split into the initialisation's key and the training driver's.
    y : array (N, J)
        Integer responses (0/1 for the 2PL, 0..C_j-1 for the GRM), -1 for missing.
    structure : irt2pl.Structure
        The model (2PL or GRM), items, factors and categories.
    settings : VIBOSettings
        Item priors, missing-data variant, encoder widths, draws per step, starting sd of q(d),
        and the training driver's settings (``train``).
    init : dict, optional
        Starting variational parameters (``{"items", "encoder"}``, as ``vibo.init`` builds
        them; by default ``vibo.init`` with the first half of ``key``).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit for the training driver (``training.train_problem``) or, with others of its
        kind, the bulk driver (``bulk.train_block``). Bad responses, an all-missing person or
        item, or a batch larger than N raise a one-line ``ValueError``.
    """
    return encoder_problem(key, y, structure, settings, _init, product_of_experts, init, label)


def fit(
    key,
    y,
    structure: irt2pl.Structure,
    settings: VIBOSettings = VIBOSettings(),
    *,
    init: dict | None = None,
    label: str = "vibo",
) -> FitResult:
    """Fit VIBO to responses ``y`` with the project's training driver: ``training.train_problem``
    of ``problem``'s fit (the arguments are ``problem``'s).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    y : array (N, J)
        Integer responses, -1 for missing.
    structure : irt2pl.Structure
        The model (2PL or GRM), items, factors and categories.
    settings : VIBOSettings
        As for ``problem``.
    init : dict, optional
        Starting variational parameters (``{"items", "encoder"}``).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.FitResult
        ``params`` holds q(d) (``items``) and the encoder. A fit whose loss becomes non-finite
        returns its last good state, unconverged.
    """
    return keep_last_good(train_problem, problem(key, y, structure, settings, init=init, label=label))


# ---------------------------------------------------------------------------------------------
# using a fit (the programs: ``vibo_programs``; q(d)'s item posterior: ``vibo_items``)


def make_encoder(st: irt2pl.Structure, settings: VIBOSettings, n_item_draws: int = 16):
    """Jitted amortized scoring ``score(params, key, y) -> (mean, sd)`` of the marginal
    q(a | r) = E_q(d) q(a | d, r), moment-matched over ``n_item_draws`` draws of d
    (``vibo_programs.score_program`` of the product of experts).

    Parameters
    ----------
    st, n_item_draws
        The model and the draws of d (0: q(d)'s mean), as ``score_program`` takes them.
    settings : VIBOSettings
        The fit's settings (the encoder reads the missing-data variant).

    Returns
    -------
    callable
        ``score(params, key, y) -> (mean, sd)``, the compiled program (cached).
    """
    return vibo_programs.score_program(product_of_experts, st, settings, n_item_draws)


def encode(
    params: dict, st: irt2pl.Structure, settings: VIBOSettings, key, y, n_item_draws: int = 16, chunk: int = 100_000
):
    """Abilities' posterior mean and sd (N, K) for responses ``y`` (checked), in chunks.

    Parameters
    ----------
    params : dict
        The fit's parameters.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        The fit's settings.
    key : jax.Array
        PRNG key of the draws of d (the same for every chunk).
    y : array (N, J)
        Responses, -1 for missing.
    n_item_draws : int
        Draws of d (``make_encoder``).
    chunk : int
        Persons per call.

    Returns
    -------
    tuple of numpy.ndarray
        Mean (N, K) and sd (N, K).

    Raises
    ------
    ValueError
        If ``y`` is not persons x items or has a response outside the model's categories.
    """
    return vibo_programs.score_in_chunks(make_encoder(st, settings, n_item_draws), params, st, key, y, chunk)


def ability_draws(params: dict, st: irt2pl.Structure, settings: VIBOSettings, key, y, n_draws: int):
    """Joint draws (item values, abilities) from q(d) q(a | d, r): dict of (S, ...) arrays.

    Parameters
    ----------
    params : dict
        The fit's parameters.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        The fit's settings.
    key : jax.Array
        PRNG key.
    y : array (N, J)
        Responses, -1 for missing.
    n_draws : int
        S, joint draws.

    Returns
    -------
    tuple
        Unconstrained item values, a dict of (S, ...) arrays by item block, and abilities
        (S, N, K).
    """
    program = vibo_programs.draws_program(product_of_experts, st, settings, int(n_draws))
    return program(params, key, jnp.asarray(y))


def log_ratios(
    params: dict, st: irt2pl.Structure, settings: VIBOSettings, key, y, n_draws: int = vibo_programs.KHAT_DRAWS
):
    """Log importance ratios log p(y, d, a) - log q(d) q(a | d, r) of joint draws of VIBO's
    approximation: the input of the fit's PSIS k-hat (``inference.variational.psis``).

    Every latent quantity is drawn: the unconstrained item values d from q(d) and every
    person's ability from the encoder's q(a | d, r) given that draw of d (the draws of
    :func:`ability_draws` with the same key). p and q are both densities of the unconstrained
    item values (the priors are defined on them, ``models.irt2pl``), so no Jacobian enters.

    Parameters
    ----------
    params : dict
        The fit's parameters.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        The fit's settings (missing-data variant, item priors).
    key : jax.Array
        PRNG key of the draws.
    y : array (N, J)
        The fit's responses, -1 for missing.
    n_draws : int
        S, joint draws.

    Returns
    -------
    numpy.ndarray
        (S,) log ratios, float32.
    """
    program = vibo_programs.log_ratios_program(product_of_experts, st, settings, settings.priors, int(n_draws))
    return np.asarray(program(params, key, jnp.asarray(y)))


def predictive_probs(
    params: dict, st: irt2pl.Structure, settings: VIBOSettings, key, y, rows, cols, n_draws: int = 200
):
    """Posterior predictive P(y_ij = c) at cells (rows, cols) that are hidden in ``y``:
    averaged over joint draws of q(d) q(a | d, r). Returns (n_cells, C).

    Parameters
    ----------
    params : dict
        The fit's parameters.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        The fit's settings.
    key : jax.Array
        PRNG key of the draws.
    y : array (N, J)
        Responses, -1 for missing (the scored cells hidden).
    rows, cols : array (n_cells,)
        Persons and items of the cells.
    n_draws : int
        Joint draws.

    Returns
    -------
    numpy.ndarray
        P(y_ij = c), shape (n_cells, C), C = ``st.n_categories_max``.
    """
    items, theta = ability_draws(params, st, settings, key, jnp.asarray(y), n_draws)
    return vibo_programs.predictive_from_draws(items, theta, st, rows, cols)
