"""q(d), the mean-field Gaussian over a 2PL or GRM's unconstrained item values (``models.irt2pl``)
that VIBO (``vibo``), its averaging variant (``vibo_average``) and per-person mean-field VI
(``mfvi``) share: its start, its reparameterized draws, its KL from the item prior, its log
density, and the item posterior it implies for the constrained parameters.

q(d) is stored as ``{"loc", "log_scale"}``, each a dict of arrays by item block (the blocks of
``irt2pl.Structure.item_shapes``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models import grm, irt2pl


def init_items(y, st: irt2pl.Structure, init_item_scale: float) -> dict:
    """q(d) at data-based starting means (``irt2pl.initial_items``) with sd ``init_item_scale``.

    Parameters
    ----------
    y : array (N, J)
        Responses, -1 for missing.
    st : irt2pl.Structure
        The model, items, factors and categories.
    init_item_scale : float
        The starting sd of every item value.

    Returns
    -------
    dict
        ``{"loc", "log_scale"}``, each a dict of arrays by item block.
    """
    loc = irt2pl.initial_items(y, st)
    log_scale = jax.tree.map(lambda v: jnp.full_like(v, math.log(init_item_scale)), loc)
    return {"loc": loc, "log_scale": log_scale}


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
