"""VIBO (seed 004): amortized variational IRT with a product-of-experts ability encoder.

Objective (the seed's theorem), per person i, with q(d) a mean-field Gaussian over the
unconstrained item values (``models.irt2pl``) and q(a_i | d, r_i) the encoder below:

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

Encoder: one Gaussian expert per *observed* response, expert_j(r) = N(mu, diag(1/prec)) with
(mu, log-ish prec) = MLP([d_j, onehot(r)]), an MLP of the item's (sampled) parameters and the
response; the product of experts is Gaussian with precision the sum of the experts' precisions
and mean their precision-weighted mean. Missing responses (``missing``):

* ``"one_prior"`` (a): no expert for a missing response; exactly one N(0, I) prior expert, so
  the pull toward the prior does not grow with the number of missing answers;
* ``"prior_per_missing"`` (b, the seed's variant): each missing response's expert is replaced
  by the prior N(0, I), i.e. a prior expert per missing response (none when nothing is missing).

Because one draw of d serves a whole batch, an expert depends only on (item, response value):
the MLP is evaluated on the J x C table of (item, category) pairs and each person's product is
a contraction of the one-hot responses with that table (a (B, J*C) x (J*C, 2K) matrix product).
This is the same function of (d_j, r_ij) as evaluating the MLP per cell, at 1/B of the cost, and
there is no loop over persons: rows with missing cells are handled by the one-hot mask.

``log_ratios``: log p(y, d, a) - log q(d) q(a | d, r) of joint draws of the fit (items and every
person's ability), the input of its PSIS k-hat (``inference.psis``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference import networks
from bayesirt.inference.training import FitResult, Problem, TrainSettings, keep_last_good, train_problem
from bayesirt.models import grm, irt2pl

MISSING_VARIANTS = ("one_prior", "prior_per_missing")
MIN_PRECISION = 1e-4  # added to every product's precision, so a person with no expert stays proper


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


def _item_features(items: dict, st: irt2pl.Structure):
    """(J, F): each item's unconstrained values side by side (the experts' item input)."""
    cols = [items[name].reshape(st.n_items, -1) for name in st.item_shapes()]
    return jnp.concatenate(cols, axis=1)


def n_item_features(st: irt2pl.Structure) -> int:
    """F, the number of unconstrained values per item (the experts' item input).

    Parameters
    ----------
    st : irt2pl.Structure
        The model, items, factors and categories.

    Returns
    -------
    int
        The sum over the item blocks (``st.item_shapes()``) of each block's values per item.
    """
    return sum(int(np.prod(s[1:])) if len(s) > 1 else 1 for s in st.item_shapes().values())


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
    loc = irt2pl.initial_items(y, st)
    log_scale = jax.tree.map(lambda v: jnp.full_like(v, math.log(settings.init_item_scale)), loc)
    sizes = [n_item_features(st) + st.n_categories_max, *map(int, settings.hidden), 2 * st.n_factors]
    return {"items": {"loc": loc, "log_scale": log_scale}, "encoder": networks.init_mlp(key, sizes, scale_last=0.1)}


def sample_items(key, q_items: dict):
    """One reparameterized draw of the unconstrained item values from q(d).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    q_items : dict
        ``{"loc", "log_scale"}``, each a dict of arrays by item block.

    Returns
    -------
    dict
        One array per item block, shaped as its ``loc``.
    """
    names = sorted(q_items["loc"])
    keys = dict(zip(names, jax.random.split(key, len(names))))
    return {
        n: q_items["loc"][n] + jnp.exp(q_items["log_scale"][n]) * jax.random.normal(keys[n], q_items["loc"][n].shape)
        for n in names
    }


def item_kl(q_items: dict, priors: irt2pl.ItemPriors):
    """KL(q(d) || p(d)), both diagonal Gaussians, summed.

    Parameters
    ----------
    q_items : dict
        ``{"loc", "log_scale"}``, each a dict of arrays by item block.
    priors : irt2pl.ItemPriors
        Prior mean and sd of each item block.

    Returns
    -------
    jax.Array
        The KL, a scalar.
    """
    total = 0.0
    for name, loc in q_items["loc"].items():
        mean, sd = priors.of(name)
        log_s = q_items["log_scale"][name]
        total = total + jnp.sum(math.log(sd) - log_s + (jnp.exp(2 * log_s) + (loc - mean) ** 2) / (2 * sd**2) - 0.5)
    return total


def expert_table(encoder, items: dict, st: irt2pl.Structure):
    """Experts of every (item, category): precision and precision x mean, each (J, C, K).

    Parameters
    ----------
    encoder : list of dict
        The expert MLP.
    items : dict
        Unconstrained item values by item block (e.g. a draw of q(d)).
    st : irt2pl.Structure
        The model, items, factors and categories.

    Returns
    -------
    tuple of jax.Array
        Precision (J, C, K) and precision x mean (J, C, K), C = ``st.n_categories_max``.
    """
    feats = _item_features(items, st)  # (J, F)
    cmax = st.n_categories_max
    onehot = jnp.eye(cmax, dtype=feats.dtype)
    x = jnp.concatenate(
        [
            jnp.broadcast_to(feats[:, None, :], (st.n_items, cmax, feats.shape[1])),
            jnp.broadcast_to(onehot[None], (st.n_items, cmax, cmax)),
        ],
        axis=-1,
    )
    out = networks.apply_mlp(encoder, x)
    k = st.n_factors
    mu, prec = out[..., :k], jax.nn.softplus(out[..., k:] + 1.0)
    return prec, prec * mu


def response_onehot(y, n_categories_max: int, dtype=jnp.float32):
    """(B, J*C) one-hot of each observed response (a missing cell is all zeros).

    Parameters
    ----------
    y : array (B, J)
        Responses, -1 for missing.
    n_categories_max : int
        C.
    dtype : dtype
        Of the result.

    Returns
    -------
    jax.Array
        The one-hot codes, shape (B, J * C).
    """
    observed = y >= 0
    oh = jax.nn.one_hot(jnp.where(observed, y, 0), n_categories_max, dtype=dtype) * observed[..., None]
    return oh.reshape(y.shape[0], -1)


def product_of_experts(encoder, items: dict, y, st: irt2pl.Structure, settings: VIBOSettings):
    """q(a | d, r) for a batch: mean (B, K) and standard deviation (B, K).

    Parameters
    ----------
    encoder : list of dict
        The expert MLP.
    items : dict
        Unconstrained item values d by item block.
    y : array (B, J)
        Responses, -1 for missing.
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        ``missing``, the missing-data variant (prior experts).

    Returns
    -------
    tuple of jax.Array
        Mean (B, K) and standard deviation (B, K) of the product of experts.
    """
    prec_t, pm_t = expert_table(encoder, items, st)
    oh = response_onehot(y, st.n_categories_max, prec_t.dtype)
    k = st.n_factors
    prec = oh @ prec_t.reshape(-1, k)
    pm = oh @ pm_t.reshape(-1, k)
    if settings.missing == "one_prior":
        n_prior = jnp.ones((y.shape[0], 1), prec.dtype)
    else:
        n_prior = jnp.sum(y < 0, axis=1, keepdims=True).astype(prec.dtype)
    prec = prec + n_prior + MIN_PRECISION  # prior experts N(0, I): precision 1, mean 0 each
    return pm / prec, jax.lax.rsqrt(prec)


def _ability_kl(mean, sd):
    return jnp.sum(0.5 * (sd**2 + mean**2 - 1.0) - jnp.log(sd), axis=-1)


def person_terms(params, key, y, index, st: irt2pl.Structure, settings: VIBOSettings):
    """Per-person VIBO_i (without the item KL) for ``y`` (B, J) at rows ``index``, averaged
    over ``settings.n_samples`` draws, and the item KL (which the draws do not touch).

    Parameters
    ----------
    params : dict
        ``{"items", "encoder"}``, as ``init`` builds them.
    key : jax.Array
        PRNG key of the draws.
    y : array (B, J)
        Responses of the batch, -1 for missing.
    index : array (B,)
        The batch persons' row numbers (the ability draws' keys are folded with them).
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        Draws per step, missing-data variant, item priors.

    Returns
    -------
    tuple of jax.Array
        VIBO_i without the item KL (B,), and KL(q(d) || p(d)), a scalar.
    """

    def one(s):
        k_item, k_ab = jax.random.split(jax.random.fold_in(key, s))
        items = sample_items(k_item, params["items"])
        mean, sd = product_of_experts(params["encoder"], items, y, st, settings)
        eps = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(k_ab, i), (st.n_factors,)))(index)
        theta = mean + sd * eps.astype(mean.dtype)
        return irt2pl.log_lik(y, theta, items, st) - _ability_kl(mean, sd)

    values = jax.vmap(one)(jnp.arange(settings.n_samples)).mean(0)
    return values, item_kl(params["items"], settings.priors)


def loss_fn(st: irt2pl.Structure, settings: VIBOSettings, n_persons: int):
    """The driver's loss: -mean_batch VIBO_i + KL(q(d) || p(d)) / N (see the module docstring).

    Parameters
    ----------
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        Draws per step, missing-data variant, item priors.
    n_persons : int
        N, persons in the data.

    Returns
    -------
    callable
        ``loss(params, key, batch)``, a scalar, for ``batch["y"]`` (B, J) and ``batch["index"]`` (B,).
    """

    def loss(params, key, batch):
        values, kl_items = person_terms(params, key, batch["y"], batch["index"], st, settings)
        return -jnp.mean(values) + kl_items / n_persons

    return loss


def check_batch(batch_size, n_persons: int) -> None:
    """Check that a minibatch is no larger than the data.

    Parameters
    ----------
    batch_size : int or None
        Persons per batch (None: full batch).
    n_persons : int
        N, persons in the data.

    Raises
    ------
    ValueError
        If ``batch_size`` is larger than ``n_persons``.
    """
    if batch_size is not None and batch_size > n_persons:
        raise ValueError(f"batch_size {batch_size} is larger than the {n_persons} persons")


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
    y = irt2pl.check_responses(y, structure)
    check_batch(settings.train.batch_size, y.shape[0])
    init_key, train_key = jax.random.split(key)
    params = _init(init_key, structure, settings, y) if init is None else init
    loss = loss_fn(structure, settings, y.shape[0])
    return Problem(loss, params, train_key, {"y": jnp.asarray(y)}, y.shape[0], settings.train, label=label)


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
# using a fit


def item_posterior(params: dict, st: irt2pl.Structure, key=None, n_draws: int = 1000) -> dict:
    """Posterior means and sds of the constrained item parameters under q(d): closed forms for
    the discrimination (log-normal) and the difficulty; the GRM's cuts (a first cut plus
    cumulated log-normal gaps) by Monte Carlo over ``n_draws`` draws of q(d) (``key``: a fixed
    key by default, so the same fit gives the same table).

    Parameters
    ----------
    params : dict
        The fit's parameters; ``params["items"]`` is q(d).
    st : irt2pl.Structure
        The model, items, factors and categories.
    key : jax.Array, optional
        PRNG key of the GRM cuts' draws (default ``jax.random.key(0)``).
    n_draws : int
        Draws of q(d) for the cuts.

    Returns
    -------
    dict
        ``(mean, sd)`` numpy arrays by parameter, as the model has them: ``discrimination``
        (J, K), ``difficulty`` (J,), ``cuts`` (J, C-1) (GRM; C = ``st.n_categories_max``).
    """
    loc, log_scale = params["items"]["loc"], params["items"]["log_scale"]
    out = {}
    if "log_discrimination" in loc:
        m, s2 = loc["log_discrimination"], jnp.exp(2 * log_scale["log_discrimination"])
        out["discrimination"] = (jnp.exp(m + s2 / 2), jnp.sqrt(jnp.expm1(s2)) * jnp.exp(m + s2 / 2))
    if "difficulty" in loc:
        out["difficulty"] = (loc["difficulty"], jnp.exp(log_scale["difficulty"]))
    if st.model == "grm":
        key = jax.random.key(0) if key is None else key
        q = {
            "loc": {k: loc[k] for k in ("first_cut", "log_gaps")},
            "log_scale": {k: log_scale[k] for k in ("first_cut", "log_gaps")},
        }

        def cut_draw(k):
            d = sample_items(k, q)
            return grm.ordered_cuts(d["first_cut"], jnp.exp(d["log_gaps"]))

        draws = jax.vmap(cut_draw)(jax.random.split(key, n_draws))
        out["cuts"] = (draws.mean(0), draws.std(0))
    return {k: (np.asarray(m), np.asarray(s)) for k, (m, s) in out.items()}


@functools.lru_cache(maxsize=32)
def make_encoder(st: irt2pl.Structure, settings: VIBOSettings, n_item_draws: int = 16):
    """Jitted amortized scoring ``score(params, key, y) -> (mean, sd)`` of the marginal
    q(a | r) = E_q(d) q(a | d, r), by moment matching over ``n_item_draws`` draws of d (with
    ``n_item_draws = 0``, q(a | d = E_q[d], r)). New persons need no refit: only the encoder.

    Parameters
    ----------
    st : irt2pl.Structure
        The model, items, factors and categories.
    settings : VIBOSettings
        The fit's settings (missing-data variant).
    n_item_draws : int
        Draws of d for the moment matching (0: q(d)'s mean).

    Returns
    -------
    callable
        ``score(params, key, y)``: mean (B, K) and sd (B, K) for responses ``y`` (B, J); cached
        per arguments.
    """

    @jax.jit
    def score(params, key, y):
        if n_item_draws == 0:
            return product_of_experts(params["encoder"], params["items"]["loc"], y, st, settings)
        keys = jax.random.split(key, n_item_draws)
        means, sds = jax.vmap(
            lambda k: product_of_experts(params["encoder"], sample_items(k, params["items"]), y, st, settings)
        )(keys)
        mean = means.mean(0)
        var = (sds**2 + means**2).mean(0) - mean**2
        return mean, jnp.sqrt(jnp.maximum(var, 0.0))

    return score


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
    y = np.asarray(y)
    if y.ndim != 2 or y.shape[1] != st.n_items:
        raise ValueError(f"responses must be persons x {st.n_items} items, got shape {y.shape}")
    top = st.categories[None, :] - 1
    if np.any((y < -1) | (y > top)):
        i, j = map(int, np.argwhere((y < -1) | (y > top))[0])
        raise ValueError(f"response {int(y[i, j])} of person {i} to item {j} is outside the model's categories")
    score = make_encoder(st, settings, n_item_draws)
    parts = [score(params, key, jnp.asarray(y[a : a + chunk])) for a in range(0, y.shape[0], chunk)]
    return np.concatenate([np.asarray(p[0]) for p in parts]), np.concatenate([np.asarray(p[1]) for p in parts])


DRAW_BATCH_CELLS = 100_000_000  # person-item cells per batch of draws (``_draws_program``)


@functools.lru_cache(maxsize=32)
def _draws_program(st: irt2pl.Structure, settings: VIBOSettings, n_draws: int):
    """``draws(params, key, y)``, jitted once per structure, settings and number of draws: the
    parameters are arguments, so the fits of one shape (a block's replications) share it."""

    def draws(params, key, y):
        def one(k):
            k_item, k_ab = jax.random.split(k)
            items = sample_items(k_item, params["items"])
            mean, sd = product_of_experts(params["encoder"], items, y, st, settings)
            return items, mean + sd * jax.random.normal(k_ab, mean.shape)

        # draws in batches whose per-cell arrays (batch x N x J floats) stay near DRAW_BATCH_CELLS:
        # all S at once held S x N x J floats (80 GB at the paper's 1M persons, 100 items and
        # 200 draws, which the kernel killed); the batches draw the same numbers
        batch = max(1, min(n_draws, DRAW_BATCH_CELLS // max(y.size, 1)))
        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=batch)

    return jax.jit(draws)


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
    return _draws_program(st, settings, int(n_draws))(params, key, jnp.asarray(y))


# ---------------------------------------------------------------------------------------------
# PSIS k-hat of a fit (inference.psis)

KHAT_DRAWS = 200  # joint draws of q behind a fit's PSIS k-hat (VIBO and mean-field VI)


def normal_log_pdf(x, mean, sd):
    """Elementwise log N(x; mean, sd^2).

    Parameters
    ----------
    x, mean, sd : array
        Points, means and standard deviations (broadcast together).

    Returns
    -------
    jax.Array
        The log densities, shaped as the broadcast arguments.
    """
    return -0.5 * ((x - mean) / sd) ** 2 - jnp.log(sd) - 0.5 * math.log(2 * math.pi)


def item_log_q(q_items: dict, items: dict):
    """log q(d) of unconstrained item values ``items`` under the diagonal Gaussian q(d).

    Parameters
    ----------
    q_items : dict
        ``{"loc", "log_scale"}``, each a dict of arrays by item block.
    items : dict
        Item values by item block, shaped as ``q_items["loc"]`` (e.g. :func:`sample_items`).

    Returns
    -------
    jax.Array
        The log density, a scalar (summed over every block and item).
    """
    return sum(
        jnp.sum(normal_log_pdf(items[n], q_items["loc"][n], jnp.exp(q_items["log_scale"][n])))
        for n in sorted(q_items["loc"])
    )


@functools.lru_cache(maxsize=32)
def _log_ratios_program(st: irt2pl.Structure, settings: VIBOSettings, n_draws: int):
    """``ratios(params, key, y)``, jitted once per structure, settings and number of draws (the
    parameters are arguments: the fits of a block share it)."""

    def ratios(params, key, y):
        def one(k):
            # the draw of ``_draws_program`` (same key, same draw): d ~ q(d), a ~ q(a | d, r)
            k_item, k_ab = jax.random.split(k)
            items = sample_items(k_item, params["items"])
            mean, sd = product_of_experts(params["encoder"], items, y, st, settings)
            theta = mean + sd * jax.random.normal(k_ab, mean.shape)
            log_q = item_log_q(params["items"], items) + jnp.sum(normal_log_pdf(theta, mean, sd))
            log_p = irt2pl.log_joint(dict(items, ability=theta), y, st, settings.priors)
            return log_p - log_q

        batch = max(1, min(n_draws, DRAW_BATCH_CELLS // max(y.size, 1)))
        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=batch)

    return jax.jit(ratios)


def log_ratios(params: dict, st: irt2pl.Structure, settings: VIBOSettings, key, y, n_draws: int = KHAT_DRAWS):
    """Log importance ratios log p(y, d, a) - log q(d) q(a | d, r) of joint draws of VIBO's
    approximation: the input of the fit's PSIS k-hat (``inference.psis``).

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
    return np.asarray(_log_ratios_program(st, settings, int(n_draws))(params, key, jnp.asarray(y)))


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
    return predictive_from_draws(items, theta, st, rows, cols)


@functools.lru_cache(maxsize=32)
def _predictive_program(st: irt2pl.Structure):
    def probs(items, theta, rows, cols):
        return jax.lax.map(lambda a: irt2pl.cell_category_probs(a[1][rows], a[0], st, cols), (items, theta)).mean(0)

    return jax.jit(probs)


PREDICTIVE_CELLS = 250_000  # cells per call of the predictive program (``predictive_from_draws``)


def predictive_from_draws(items: dict, theta, st: irt2pl.Structure, rows, cols):
    """Mean over draws of P(y_ij = c): ``items`` dict of (S, ...) unconstrained item draws,
    ``theta`` (S, N, K). Shared by every method that has draws (one compiled program per
    structure and shapes). Returns (n_cells, C).

    The cells go through in chunks of ``PREDICTIVE_CELLS`` (the last padded with cell 0): the
    program holds S probabilities per cell before averaging them, 24 GB for the 15 million
    scored cells of the paper's 1M-person design at 200 draws. Each cell's mean is the same
    arithmetic whatever its chunk.

    Parameters
    ----------
    items : dict
        Unconstrained item draws by item block, each (S, ...).
    theta : array (S, N, K)
        Ability draws.
    st : irt2pl.Structure
        The model, items, factors and categories.
    rows, cols : array (n_cells,)
        Persons and items of the cells.

    Returns
    -------
    numpy.ndarray
        P(y_ij = c), shape (n_cells, C), C = ``st.n_categories_max``.
    """
    rows, cols = np.asarray(rows), np.asarray(cols)
    program, size = _predictive_program(st), min(PREDICTIVE_CELLS, max(len(rows), 1))
    parts = []
    for a in range(0, len(rows), size):
        r, c = rows[a : a + size], cols[a : a + size]
        pad = size - len(r)
        r, c = np.pad(r, (0, pad)), np.pad(c, (0, pad))
        parts.append(np.asarray(program(items, theta, jnp.asarray(r), jnp.asarray(c)))[: size - pad])
    if not parts:
        return np.asarray(program(items, theta, jnp.asarray(rows), jnp.asarray(cols)))
    return np.concatenate(parts)
