"""The log-linear cognitive diagnosis model (LCDM) with a Q-matrix: the one LCDM likelihood.

Person i has an attribute profile ``z_i in {0,1}^A``; there are ``L = 2^A`` profiles. Item j
measures the attributes with ``Q[j, a] = 1``; its feature vector ``delta_j(z)`` holds 1
(intercept), the mastery indicator of every measured attribute (main effects) and the products
of every subset of them (interactions of every order). The correct-response probability is
``sigmoid(beta_j . delta_j(z))``.

Missing responses are masked: ``y`` is an integer (N, J) array with 0/1 observed and any other
value (the project codes missing as -1) ignored. All probabilities are handled in log space;
the per-profile log-likelihood of every person is two matrix products,
``y_obs @ log sigmoid(eta).T + n_obs @ log sigmoid(-eta).T``.

The profiles, the features of an item and the design tensor of a Q-matrix, with the checks of
the model's inputs, live in ``bayesirt.models.lcdm_design``; the optional monotonicity
constraints in ``bayesirt.models.lcdm_monotone``. Their names are importable from here too.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln, logsumexp

from bayesirt.models.lcdm_design import (  # noqa: F401  (the LCDM's names, importable from here as before)
    MAX_ATTRIBUTES,
    MAX_PROFILE_CELLS,
    Design,
    check_q_matrix,
    check_responses,
    check_size,
    design,
    feature_name,
    item_features,
    pack_beta,
    profile_index,
    profile_label,
    profiles,
)
from bayesirt.models.lcdm_monotone import (  # noqa: F401  (as above)
    check_monotone_design,
    monotone_beta,
    monotone_item_log_jac,
    monotone_u,
)

# ---------------------------------------------------------------------------------------------
# likelihood (pure jax functions of arrays)


def observed_counts(y):
    """(y_obs, n_obs): float (N, J) indicators of an observed 1 and an observed 0.

    Parameters
    ----------
    y : array (N, J)
        Responses 0/1; any other value is missing.

    Returns
    -------
    tuple of jax.Array
        ``y_obs`` and ``n_obs``, each (N, J) float32.
    """
    y = jnp.asarray(y)
    return (y == 1).astype(jnp.float32), (y == 0).astype(jnp.float32)


def item_logits(beta, delta):
    """(..., J, L) logits ``beta_j . delta_j(l)``; ``beta`` (..., J, K).

    Parameters
    ----------
    beta : array (..., J, K)
        Padded coefficients.
    delta : array (J, L, K)
        Design tensor (``Design.delta``).

    Returns
    -------
    jax.Array
        Logits, shape (..., J, L).
    """
    return jnp.einsum("jlk,...jk->...jl", delta, beta)


def profile_loglik(beta, delta, y_obs, n_obs):
    """(..., N, L): log p(y_i | profile l, beta), missing cells contributing nothing.

    Parameters
    ----------
    beta : array (..., J, K)
        Padded coefficients.
    delta : array (J, L, K)
        Design tensor (``Design.delta``).
    y_obs, n_obs : array (N, J)
        Indicators of an observed 1 and an observed 0 (``observed_counts``).

    Returns
    -------
    jax.Array
        Shape (..., N, L).
    """
    eta = item_logits(beta, delta)
    return jnp.einsum("nj,...jl->...nl", y_obs, jax.nn.log_sigmoid(eta)) + jnp.einsum(
        "nj,...jl->...nl", n_obs, jax.nn.log_sigmoid(-eta)
    )


def marginal_loglik(beta, log_pi, delta, y_obs, n_obs):
    """(N,): log sum_l pi_l p(y_i | l, beta), per person (Z summed out in log space).

    Parameters
    ----------
    beta : array (J, K)
        Padded coefficients (leading axes carry through to the result).
    log_pi : array (L,)
        Log profile probabilities.
    delta : array (J, L, K)
        Design tensor (``Design.delta``).
    y_obs, n_obs : array (N, J)
        Indicators of an observed 1 and an observed 0 (``observed_counts``).

    Returns
    -------
    jax.Array
        Shape (N,).
    """
    return logsumexp(profile_loglik(beta, delta, y_obs, n_obs) + log_pi, axis=-1)


def log_likelihood(params: dict, y, des: Design):
    """(N,): each person's log-likelihood with the profile summed out, in the models' one
    signature (``bayesirt.models``): ``log_likelihood(params, y, ...)``.

    Parameters
    ----------
    params : dict
        ``beta`` (J, K), padded coefficients, and ``log_pi`` (L,), log profile probabilities.
    y : array (N, J)
        Responses 0/1, -1 for missing.
    des : Design
        The Q-matrix's design (``design``).

    Returns
    -------
    jax.Array
        Shape (N,): ``marginal_loglik`` of the responses' observed cells.
    """
    y_obs, n_obs = observed_counts(y)
    return marginal_loglik(params["beta"], params["log_pi"], des.delta, y_obs, n_obs)


def posterior_profiles(beta, log_pi, delta, y_obs, n_obs):
    """(N, L): log p(z_i = l | y_i, beta, pi).

    Parameters
    ----------
    beta : array (J, K)
        Padded coefficients (leading axes carry through to the result).
    log_pi : array (L,)
        Log profile probabilities.
    delta : array (J, L, K)
        Design tensor (``Design.delta``).
    y_obs, n_obs : array (N, J)
        Indicators of an observed 1 and an observed 0 (``observed_counts``).

    Returns
    -------
    jax.Array
        Log posterior profile probabilities, shape (N, L); each row sums to 1 on the
        probability scale.
    """
    joint = profile_loglik(beta, delta, y_obs, n_obs) + log_pi
    return joint - logsumexp(joint, axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# priors of the seed: sigma^2 ~ IG(a0, b0), beta_j | sigma^2 ~ N(0, sigma^2 I), pi ~ Dir(d0)


class Priors(NamedTuple):
    a0: float = 1e-2
    b0: float = 1e-4
    d0: float = 1.0  # symmetric Dirichlet concentration


def log_normal_beta(beta, sigma2, feature_mask):
    """(..., J): log N(beta_j; 0, sigma^2 I) over each item's real features. ``sigma2`` (...).

    Parameters
    ----------
    beta : array (..., J, K)
        Padded coefficients.
    sigma2 : array (...) or float
        Prior variance.
    feature_mask : array (J, K)
        1 for each item's real features.

    Returns
    -------
    jax.Array
        Shape (..., J).
    """
    s2 = jnp.asarray(sigma2)[..., None]
    k = feature_mask.sum(-1)
    return -0.5 * jnp.sum(feature_mask * beta**2, -1) / s2 - 0.5 * k * (jnp.log(2 * jnp.pi) + jnp.log(s2))


def log_inv_gamma(sigma2, a, b):
    """log IG(sigma^2; a, b): the inverse-gamma log-density with shape ``a`` and scale ``b``.

    Parameters
    ----------
    sigma2 : array
        Positive values.
    a, b : float
        Shape and scale.

    Returns
    -------
    jax.Array
        The shape of ``sigma2``.
    """
    return a * jnp.log(b) - gammaln(a) - (a + 1) * jnp.log(sigma2) - b / sigma2


def log_dirichlet(log_pi, d):
    """log Dir(pi; d) from log pi (..., L) and concentrations d (L,) or scalar.

    Parameters
    ----------
    log_pi : array (..., L)
        Log profile probabilities.
    d : array (L,) or float
        Concentrations.

    Returns
    -------
    jax.Array
        Shape (...).
    """
    d = jnp.broadcast_to(jnp.asarray(d, log_pi.dtype), log_pi.shape[-1:])
    return gammaln(d.sum()) - gammaln(d).sum() + jnp.sum((d - 1) * log_pi, -1)


def log_joint_collapsed(beta, log_pi, sigma2, delta, feature_mask, y_obs, n_obs, priors: Priors):
    """log p(y, beta, pi, sigma^2) with Z summed out (constrained parameters, no Jacobians).

    Parameters
    ----------
    beta : array (J, K)
        Padded coefficients.
    log_pi : array (L,)
        Log profile probabilities.
    sigma2 : float
        Prior variance of the coefficients.
    delta : array (J, L, K)
        Design tensor (``Design.delta``).
    feature_mask : array (J, K)
        1 for each item's real features.
    y_obs, n_obs : array (N, J)
        Indicators of an observed 1 and an observed 0 (``observed_counts``).
    priors : Priors
        Hyperparameters ``a0``, ``b0`` (of sigma^2) and ``d0`` (of pi).

    Returns
    -------
    jax.Array
        A scalar.
    """
    return (
        marginal_loglik(beta, log_pi, delta, y_obs, n_obs).sum()
        + log_normal_beta(beta, sigma2, feature_mask).sum()
        + log_dirichlet(log_pi, priors.d0)
        + log_inv_gamma(sigma2, priors.a0, priors.b0)
    )
