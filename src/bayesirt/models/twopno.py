"""Two-parameter normal ogive (2PNO) and 2PL binary models (seed 001, Albert 1992).

    P(y_ij = 1) = F(eta_ij),   eta_ij = a_j * theta_i - d_j,

with ``F = Phi`` (``link="probit"``, the normal ogive of the seed) or ``F = sigmoid``
(``link="logit"``, the 2PL). Responses are integers 0/1 with -1 for missing; missing cells add
nothing to the likelihood.

Priors (seed 001), all configurable through :class:`Priors`:

    theta_i ~ N(mu_theta, sigma2_theta),  d_j ~ N(mu_d, sigma2_d),  a_j ~ N(mu_a, sigma2_a) 1(a_j > 0).

The seed gives the form of the priors, not their values; the defaults are the standard-normal
choices of Sheng's (2008) MATLAB Gibbs sampler for this model (every mean 0, every variance 1),
under which a_j has a half-normal prior. The positive discrimination identifies the sign of
the ability scale (no reflection), the N(0, 1) ability prior its location and scale.

Numerics: a cell's log-probability is ``log F(s * eta)`` with ``s = +1`` for y = 1 and ``-1``
for y = 0 (``Phi(-x) = 1 - Phi(x)``, ``sigmoid(-x) = 1 - sigmoid(x)``), through
``jax.scipy.special.log_ndtr`` / ``jax.nn.log_sigmoid``: never ``log(1 - p)``, so a cell
predicted wrong by 30 standard deviations still has a finite log-probability and gradient.

Parameters are a dict of arrays: ``ability`` (N,), ``discrimination`` (J,), ``difficulty`` (J,).
For NUTS the joint density is also written on the real line (``log_discrimination`` instead
of ``discrimination``, with the log-Jacobian), marginal over the responses' latent normals:
no data augmentation.

The checks of a binary response matrix and data-driven starting values live in
``bayesirt.models.twopno_responses``; both are importable from here too.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr
from scipy.special import log_ndtr as scipy_log_ndtr

from bayesirt.models.twopno_responses import check_binary_responses, initial_values  # noqa: F401  (importable from here as before)

LINKS = ("probit", "logit")
PARAMETERS = ("discrimination", "difficulty", "ability")


@dataclass(frozen=True)
class Priors:
    """Means and variances (not sds, as in the seed) of the three priors.

    ``discrimination_*`` are the location and variance of the normal that is truncated to
    a > 0 (not the mean and variance of the truncated distribution).
    """

    ability_mean: float = 0.0
    ability_var: float = 1.0
    difficulty_mean: float = 0.0
    difficulty_var: float = 1.0
    discrimination_mean: float = 0.0
    discrimination_var: float = 1.0

    def __post_init__(self):
        for key, value in asdict(self).items():
            if not isinstance(value, (int, float, np.floating, np.integer)) or not math.isfinite(value):
                raise ValueError(f"prior '{key}' must be a finite number, got {value!r}")
            if key.endswith("_var") and value <= 0:
                raise ValueError(f"prior '{key}' must be a positive variance, got {value!r}")


def linear_predictor(theta, a, d):
    """eta_ij = a_j * theta_i - d_j, shape (..., N, J).

    Parameters
    ----------
    theta : array (..., N)
        Abilities.
    a : array (..., J)
        Discriminations.
    d : array (..., J)
        Difficulties.

    Returns
    -------
    jax.Array
        eta, shape (..., N, J).
    """
    return theta[..., :, None] * a[..., None, :] - d[..., None, :]


def _check_link(link: str):
    if link not in LINKS:
        raise ValueError(f"link '{link}' is not known; expected one of {list(LINKS)}")


def cell_log_prob(y, eta, link: str = "probit"):
    """log P(y_ij | eta_ij) per cell, 0 where y_ij = -1 (missing). Stable for any |eta|.

    Parameters
    ----------
    y : array
        Integer responses 0/1, -1 for missing; broadcasts against ``eta``.
    eta : array
        Linear predictor of each cell.
    link : {"probit", "logit"}
        Link function F.

    Returns
    -------
    jax.Array
        log P(y_ij | eta_ij), the broadcast shape of ``y`` and ``eta``; 0 where missing.

    Raises
    ------
    ValueError
        If ``link`` is not known.
    """
    _check_link(link)
    sign = jnp.where(y == 1, 1.0, -1.0).astype(eta.dtype)
    x = sign * eta
    lp = log_ndtr(x) if link == "probit" else jax.nn.log_sigmoid(x)
    return jnp.where(y >= 0, lp, 0.0)


def log_likelihood(params: dict, y, link: str = "probit"):
    """Per-person log-likelihood, shape (N,).

    Parameters
    ----------
    params : dict
        ``ability`` (N,), ``discrimination`` (J,), ``difficulty`` (J,).
    y : array (N, J)
        Integer responses 0/1, -1 for missing.
    link : {"probit", "logit"}
        Link function F.

    Returns
    -------
    jax.Array
        Sum over each person's observed items, shape (N,).
    """
    eta = linear_predictor(params["ability"], params["discrimination"], params["difficulty"])
    return cell_log_prob(y, eta, link).sum(-1)


def _normal_logpdf(x, mean, var):
    return -0.5 * (jnp.log(2 * jnp.pi * var) + (x - mean) ** 2 / var)


def log_prior_terms(params: dict, priors: Priors) -> dict:
    """Summed log prior of each parameter block (normalized; a <= 0 gives -inf).

    Parameters
    ----------
    params : dict
        ``ability`` (N,), ``discrimination`` (J,), ``difficulty`` (J,).
    priors : Priors
        Means and variances of the priors.

    Returns
    -------
    dict
        ``ability``, ``difficulty``, ``discrimination``: each a scalar jax.Array.
    """
    p = priors
    a = params["discrimination"]
    sd_a = math.sqrt(p.discrimination_var)
    # normalizing constant of the truncation: P(a > 0) = Phi(mu_a / sd_a)
    log_mass = float(scipy_log_ndtr(p.discrimination_mean / sd_a))
    la = jnp.where(a > 0, _normal_logpdf(a, p.discrimination_mean, p.discrimination_var) - log_mass, -jnp.inf)
    return {
        "ability": _normal_logpdf(params["ability"], p.ability_mean, p.ability_var).sum(),
        "difficulty": _normal_logpdf(params["difficulty"], p.difficulty_mean, p.difficulty_var).sum(),
        "discrimination": la.sum(),
    }


def log_prior(params: dict, priors: Priors):
    """Log prior density of ``params`` (constrained scale): the sum of ``log_prior_terms``.

    Parameters
    ----------
    params : dict
        ``ability`` (N,), ``discrimination`` (J,), ``difficulty`` (J,).
    priors : Priors
        Means and variances of the priors.

    Returns
    -------
    jax.Array
        A scalar; -inf if a discrimination is <= 0.
    """
    terms = log_prior_terms(params, priors)
    return terms["ability"] + terms["difficulty"] + terms["discrimination"]


def log_joint(params: dict, y, priors: Priors, link: str = "probit"):
    """log p(y, theta, a, d) on the constrained scale (scalar).

    Parameters
    ----------
    params : dict
        ``ability`` (N,), ``discrimination`` (J,), ``difficulty`` (J,).
    y : array (N, J)
        Integer responses 0/1, -1 for missing.
    priors : Priors
        Means and variances of the priors.
    link : {"probit", "logit"}
        Link function F.

    Returns
    -------
    jax.Array
        A scalar.
    """
    return log_likelihood(params, y, link).sum() + log_prior(params, priors)


def constrain(unconstrained: dict) -> dict:
    """``{ability, log_discrimination, difficulty}`` -> ``{ability, discrimination, difficulty}``.

    Parameters
    ----------
    unconstrained : dict
        ``ability`` (N,), ``log_discrimination`` (J,), ``difficulty`` (J,).

    Returns
    -------
    dict
        ``ability`` (N,), ``discrimination`` = exp(``log_discrimination``) (J,), ``difficulty`` (J,).
    """
    return {
        "ability": unconstrained["ability"],
        "discrimination": jnp.exp(unconstrained["log_discrimination"]),
        "difficulty": unconstrained["difficulty"],
    }


def unconstrain(params: dict) -> dict:
    """The inverse of ``constrain``: ``{ability, discrimination, difficulty}`` ->
    ``{ability, log_discrimination, difficulty}``.

    Parameters
    ----------
    params : dict
        ``ability`` (N,), ``discrimination`` (J,) > 0, ``difficulty`` (J,).

    Returns
    -------
    dict
        ``ability`` (N,), ``log_discrimination`` (J,), ``difficulty`` (J,), as jax arrays.
    """
    return {
        "ability": jnp.asarray(params["ability"]),
        "log_discrimination": jnp.log(jnp.asarray(params["discrimination"])),
        "difficulty": jnp.asarray(params["difficulty"]),
    }


def log_joint_unconstrained(unconstrained: dict, y, priors: Priors, link: str = "probit"):
    """The posterior's log-density (up to a constant) on the real line, for NUTS: log a_j in
    place of a_j, plus the log-Jacobian sum_j log a_j. Marginal over the latent normals.

    Parameters
    ----------
    unconstrained : dict
        ``ability`` (N,), ``log_discrimination`` (J,), ``difficulty`` (J,).
    y : array (N, J)
        Integer responses 0/1, -1 for missing.
    priors : Priors
        Means and variances of the priors.
    link : {"probit", "logit"}
        Link function F.

    Returns
    -------
    jax.Array
        A scalar.
    """
    params = constrain(unconstrained)
    return log_joint(params, y, priors, link) + unconstrained["log_discrimination"].sum()


def make_log_density(y, priors: Priors | None = None, link: str = "probit"):
    """Closure ``log_density(unconstrained) -> scalar`` over fixed responses (for a NUTS runner).

    Parameters
    ----------
    y : array-like (N, J)
        Responses 0/1, -1 for missing (held as int8).
    priors : Priors, optional
        Means and variances of the priors (None: ``Priors()``).
    link : {"probit", "logit"}
        Link function F.

    Returns
    -------
    callable
        ``log_density(unconstrained)``: ``log_joint_unconstrained`` at ``y``, a scalar.

    Raises
    ------
    ValueError
        If ``link`` is not known.
    """
    _check_link(link)
    priors = priors or Priors()
    y = jnp.asarray(y, dtype=jnp.int8)

    def log_density(unconstrained):
        return log_joint_unconstrained(unconstrained, y, priors, link)

    return log_density
