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
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr
from scipy.special import log_ndtr as scipy_log_ndtr

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


def initial_values(y, link: str = "probit") -> dict:
    """A data-driven starting point (numpy float32): standardized proportion-correct
    abilities, discriminations 1, difficulties from each item's proportion correct.

    With a = 1 and theta ~ N(0, 1) the marginal P(y = 1) of the probit model is
    Phi(-d / sqrt(2)), so d = -sqrt(2) Phi^{-1}(p_j) (logit: d = -logit(p_j) sqrt(1 + pi/8)).

    Parameters
    ----------
    y : array-like (N, J)
        Responses 0/1, -1 for missing.
    link : {"probit", "logit"}
        Link function F (anything but "probit" is taken as the logit).

    Returns
    -------
    dict
        ``ability`` (N,), ``discrimination`` (J,), ``difficulty`` (J,): numpy float32 arrays.
    """
    from scipy.special import logit, ndtri

    y = np.asarray(y)
    obs = y >= 0
    n_obs_item = obs.sum(0)
    p_item = np.clip(np.where(obs, y, 0).sum(0) / np.maximum(n_obs_item, 1), 0.02, 0.98)
    p_item = np.where(n_obs_item > 0, p_item, 0.5)
    if link == "probit":
        d = -np.sqrt(2.0) * ndtri(p_item)
    else:
        d = -logit(p_item) * np.sqrt(1 + np.pi / 8)
    n_obs_person = obs.sum(1)
    score = np.where(obs, y, 0).sum(1) / np.maximum(n_obs_person, 1)
    sd = score.std()
    theta = (score - score.mean()) / (sd if sd > 0 else 1.0)
    theta = np.where(n_obs_person > 0, theta, 0.0)
    return {
        "ability": theta.astype(np.float32),
        "discrimination": np.ones(y.shape[1], np.float32),
        "difficulty": d.astype(np.float32),
    }


def check_binary_responses(y, item_names=None, *, where: str = "responses", warn=None) -> np.ndarray:
    """Validate a binary response matrix; return it as int8.

    Stops (``ValueError``, one line) on a matrix that is not 2-D or on codes other than
    0, 1 and -1 (missing), naming the first offending item and person. Warns (through
    ``warn``, default :func:`warnings.warn`), naming them, about items everyone answered the
    same way (their parameters are then identified only through the prior, which is proper)
    and items with no observed response; persons with no observed response are counted in a
    warning: they are kept, and their ability draws come from the prior.

    Parameters
    ----------
    y : array-like (N, J)
        Response codes.
    item_names : sequence of str, optional
        Item names for the messages (None: "item j").
    where : str
        Prefix of the messages, naming the data checked.
    warn : callable, optional
        Receives each warning's message (None: :func:`warnings.warn`).

    Returns
    -------
    np.ndarray
        The responses, shape (N, J), as int8.

    Raises
    ------
    ValueError
        If ``y`` is not 2-D or holds a code other than 0, 1 and -1.
    """
    import warnings

    warn = warn or (lambda msg: warnings.warn(msg, stacklevel=3))
    y = np.asarray(y)
    if y.ndim != 2:
        raise ValueError(f"{where}: expected a persons x items matrix, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ValueError(f"{where}: binary responses must be integer codes 0, 1 or -1 (missing)")
    names = list(item_names) if item_names is not None else [f"item {j}" for j in range(y.shape[1])]
    bad = ~np.isin(y, (-1, 0, 1))
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        raise ValueError(
            f"{where}: code {y[i, j].item()!r} at person {i}, item '{names[j]}' is not binary; "
            f"expected 0, 1 or -1 (missing) ({int(bad.sum())} such cells)"
        )
    y = y.astype(np.int8)
    obs = y >= 0
    n_obs = obs.sum(0)
    n_ones = (y == 1).sum(0)
    empty = np.flatnonzero(n_obs == 0)
    if empty.size:
        warn(
            f"{where}: item(s) {[names[j] for j in empty]} have no observed response; "
            f"their parameters are drawn from the prior"
        )
    constant = np.flatnonzero((n_obs > 0) & ((n_ones == 0) | (n_ones == n_obs)))
    for j in constant:
        warn(
            f"{where}: item '{names[j]}' was answered {int(y[obs[:, j], j][0])} by every one of its "
            f"{int(n_obs[j])} respondents; its parameters rest on the prior"
        )
    no_resp = np.flatnonzero(obs.sum(1) == 0)
    if no_resp.size:
        warn(
            f"{where}: {no_resp.size} person(s) with no observed response (first: person {int(no_resp[0])}) "
            f"are kept; their abilities are drawn from the prior"
        )
    return y
