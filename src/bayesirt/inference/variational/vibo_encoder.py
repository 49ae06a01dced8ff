"""VIBO's ability encoder (seed 004): a product of Gaussian experts, one per observed response.

expert_j(r) = N(mu, diag(1/prec)) with (mu, log-ish prec) = MLP([d_j, onehot(r)]), an MLP of
the item's (sampled) unconstrained values and the response; the product of experts is Gaussian
with precision the sum of the experts' precisions and mean their precision-weighted mean. A
missing response has no expert; the prior N(0, I) enters as one expert per person
(``missing="one_prior"``) or one per missing response (``"prior_per_missing"``, the seed's
variant), see ``vibo``.

Because one draw of d serves a whole batch, an expert depends only on (item, response value):
the MLP is evaluated on the J x C table of (item, category) pairs (:func:`item_category_inputs`)
and each person's product is a contraction of the one-hot responses with that table (a
(B, J*C) x (J*C, 2K) matrix product). This is the same function of (d_j, r_ij) as evaluating
the MLP per cell, at 1/B of the cost, and there is no loop over persons: rows with missing
cells are handled by the one-hot mask. The averaging encoder (``vibo_average``) reads the same
table of inputs and the same one-hot codes.

An encoder, for the objective and the programs that use a fit (``vibo``, ``vibo_programs``), is
a function ``encoder(encoder_params, items, y, st, settings) -> (mean, sd)``:
:func:`product_of_experts` here, ``vibo_average.average_encoder`` beside it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.variational import networks
from bayesirt.models import irt2pl

MIN_PRECISION = 1e-4  # added to every product's precision, so a person with no expert stays proper


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


def item_category_inputs(items: dict, st: irt2pl.Structure):
    """The network input of every (item, category) pair: [d_j, onehot(c)], (J, C, F + C).

    Parameters
    ----------
    items : dict
        Unconstrained item values by item block (e.g. a draw of q(d)).
    st : irt2pl.Structure
        The model, items, factors and categories.

    Returns
    -------
    jax.Array
        The inputs, (J, C, F + C), C = ``st.n_categories_max``, F = :func:`n_item_features`.
    """
    feats = _item_features(items, st)  # (J, F)
    cmax = st.n_categories_max
    onehot = jnp.eye(cmax, dtype=feats.dtype)
    return jnp.concatenate(
        [
            jnp.broadcast_to(feats[:, None, :], (st.n_items, cmax, feats.shape[1])),
            jnp.broadcast_to(onehot[None], (st.n_items, cmax, cmax)),
        ],
        axis=-1,
    )


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
    out = networks.apply_mlp(encoder, item_category_inputs(items, st))
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


def product_of_experts(encoder, items: dict, y, st: irt2pl.Structure, settings):
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
    settings : vibo.VIBOSettings
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
