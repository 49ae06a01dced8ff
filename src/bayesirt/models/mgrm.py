"""Multidimensional logistic graded response model for item factor analysis (seed 003, eq. 1-4).

Person i has P latent factors z_i ~ N(0, Sigma); item j has loadings beta_j (P,) and C_j - 1
strictly ordered intercepts. In the paper's notation

    P(x_ij >= k | z_i) = sigmoid(beta_j . z_i + alpha_jk),   k = 1..C_j-1,

so the intercepts alpha_jk decrease in k. The project's one GRM likelihood
(``bayesirt.models.grm``) is written with increasing cuts, ``sigmoid(score - cut_k)``; here
``score = beta_j . z_i`` and ``cut_jk = -alpha_jk``. The cuts are increasing by construction
(``grm.ordered_cuts``: a free first cut plus a cumulative sum of softplus-positive increments),
so the intercepts can never cross, even for items with a rarely used category.

Parameters (a dict of arrays; everything is unconstrained, so any optimizer may move it):
    loadings_raw    (I, P)        loadings = mask * raw, or mask * softplus(raw) when positive
    cut_base        (I,)          first cut
    cut_increments  (I, Kmax-2)   softplus^{-1} of the gaps between cuts
    corr_raw        (P(P-1)/2,)   unconstrained vector -> Cholesky factor of the factor
                                  correlation matrix (TFP ``CorrelationCholesky``); absent
                                  when the prior is the identity (exploratory fits)

``Structure`` holds the static facts (number of categories, Q-mask, constraints). A Q-mask
fixes the loadings outside it at exactly zero (confirmatory analysis); without it every
loading is free (exploratory analysis; then the prior should be the identity, because a
correlation matrix and an oblique rotation are not separately identified).

The structure and the maps from the parameters to loadings, cuts and correlations live in
``bayesirt.models.mgrm_structure``, starting values and conversions to and from natural
values in ``bayesirt.models.mgrm_values``; their names are importable from here too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models import grm
from bayesirt.models.mgrm_structure import (  # noqa: F401  (the model's names, importable from here as before)
    Structure,
    cuts,
    factor_cholesky,
    factor_corr,
    intercepts,
    loadings,
    simple_structure_q,
    structure,
)
from bayesirt.models.mgrm_values import init_params, natural_params, params_from_natural, truth_params  # noqa: F401  (as above)

LOG_2PI = float(np.log(2.0 * np.pi))


def log_likelihood(params, y, st: Structure):
    """log p(x_i | z) summed over observed items; missing cells (-1) contribute 0.

    y: (B, I) integer codes; ``params["ability"]`` z: (..., B, P) latent draws  ->  (..., B).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (module docstring) and ``ability`` (..., B, P), the factor
        scores.
    y : array (B, I)
        Integer responses, -1 for missing.
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (..., B).
    """
    lam = loadings(params, st)
    score = params["ability"] @ lam.T  # (..., B, I)
    return grm.log_prob(y, score, cuts(params, st), st.n_categories).sum(-1)


def log_prior(params, st: Structure):
    """log N(z; 0, Sigma) for the factor scores z = ``params["ability"]`` (..., P), with
    Sigma = L L' (the identity if not correlated).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (module docstring) and ``ability`` (..., P), the factor scores.
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (...).
    """
    z, p = params["ability"], st.n_factors
    if not st.correlated:
        return -0.5 * jnp.sum(z * z, -1) - 0.5 * p * LOG_2PI
    chol = factor_cholesky(params, st)
    flat = z.reshape(-1, p)
    white = jax.scipy.linalg.solve_triangular(chol, flat.T, lower=True).T.reshape(z.shape)
    return -0.5 * jnp.sum(white * white, -1) - jnp.sum(jnp.log(jnp.diag(chol))) - 0.5 * p * LOG_2PI


def log_joint(params, y, st: Structure):
    """log p(x_i, z) = log p(x_i | z) + log p(z): (B, I), ``params["ability"]`` (..., B, P) -> (..., B).

    Parameters
    ----------
    params : dict
        Unconstrained parameters (module docstring) and ``ability`` (..., B, P), the factor
        scores.
    y : array (B, I)
        Integer responses, -1 for missing.
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (..., B).
    """
    return log_likelihood(params, y, st) + log_prior(params, st)


def sample_prior(key, params, st: Structure, shape=()):
    """Factor scores drawn from their prior N(0, Sigma).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    params : dict
        Unconstrained parameters (module docstring).
    st : Structure
        The model's structure.
    shape : tuple of int
        Leading shape of the draws.

    Returns
    -------
    jax.Array
        Shape ``shape + (P,)``.
    """
    eps = jax.random.normal(key, shape + (st.n_factors,))
    return eps @ factor_cholesky(params, st).T
