"""The PSIS k-hat of a black-box VI fit of the LCDM (``inference.dcm.bbvi``): log importance ratios
of joint draws of the fitted approximation, the input of ``inference.variational.psis``.
"""

from __future__ import annotations

from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.dcm.bbvi import Problem
from bayesirt.inference.dcm.bbvi_family import draw, log_q_beta, log_q_pi, log_q_sigma2
from bayesirt.inference.dcm.bbvi_settings import BBVISettings
from bayesirt.inference.execution import training
from bayesirt.models import lcdm

KHAT_DRAWS = 200  # joint draws of q behind a fit's PSIS k-hat
KHAT_BATCH_CELLS = 50_000_000  # person-item cells of the draws evaluated together (memory)


def joint_log_ratio(params, z, q_beta, log_pi, sigma2, data: dict, priors: lcdm.Priors, monotone: bool = False):
    """log p(y, Z, beta, pi, sigma^2) - log q(Z, beta, pi, sigma^2) at one joint draw of q.

    The ratio of BBVI's own objective: its ELBO is the expectation under q of this quantity
    (``inference.dcm.bbvi_gradients``), with the persons' profiles Z among the latent variables
    and q(Z_i) = Cat(softmax(rho_i)) part of the approximation. p and q are densities of the
    same coordinates: beta (with ``monotone``, the unconstrained u of
    ``models.lcdm.monotone_beta``, the prior gaining the log-Jacobian; the cone's normalising
    constant, the same for every draw, is left out as in the ELBO), pi on the simplex
    (Dirichlet densities of both), and sigma^2 (inverse-gamma densities of both).

    Parameters
    ----------
    params : dict
        Variational parameters.
    z : array (N,)
        Each person's profile index.
    q_beta : array (J, K)
        The draw of q's coefficients (u under ``monotone``, else beta itself).
    log_pi : array (L,)
        Log profile probabilities.
    sigma2 : float
        The prior variance of the coefficients.
    data : dict
        The driver's data of the fit (``Problem.data``: ``y_obs``, ``n_obs`` and the design).
    priors : lcdm.Priors
        The model's priors.
    monotone : bool
        Whether q is over the unconstrained u of ``models.lcdm.monotone_beta``.

    Returns
    -------
    jax.Array
        The log ratio, a scalar.
    """
    shared = data[training.SHARED]
    delta, fmask, order = shared["delta"], shared["feature_mask"], shared["order"]
    if monotone:
        beta = lcdm.monotone_beta(q_beta, order)[0] * fmask
        log_jac = lcdm.monotone_item_log_jac(q_beta, order).sum()
    else:
        beta, log_jac = q_beta, 0.0
    eta = lcdm.item_logits(beta, delta)[:, z].T  # (N, J): each person's logits at its profile
    loglik = jnp.sum(data["y_obs"] * jax.nn.log_sigmoid(eta) + data["n_obs"] * jax.nn.log_sigmoid(-eta))
    log_p = (
        loglik
        + jnp.sum(log_pi[z])
        + lcdm.log_normal_beta(beta, sigma2, fmask).sum()
        + log_jac
        + lcdm.log_dirichlet(log_pi, priors.d0)
        + lcdm.log_inv_gamma(sigma2, priors.a0, priors.b0)
    )
    log_qz = jnp.take_along_axis(jax.nn.log_softmax(params["rho"]), z[:, None], 1).sum()
    lq_beta = jax.vmap(log_q_beta)(params["mu"], params["chol_off"], params["log_diag"], q_beta, fmask).sum()
    log_q = log_qz + lq_beta + log_q_pi(params["log_d"], log_pi) + log_q_sigma2(params["log_ab"], sigma2)
    return log_p - log_q


@lru_cache(maxsize=32)
def _log_ratios_program(priors: lcdm.Priors, monotone: bool, n_draws: int):
    """``ratios(params, key, data)``, jitted once per priors, monotonicity and number of draws
    (the parameters and data are arguments: the fits of a block, bbvi and bbvi_cv, share it)."""

    def ratios(params, key, data):
        fmask = data[training.SHARED]["feature_mask"]

        def one(k):
            z, q_beta, log_pi, sigma2 = draw(params, k, 1, params["rho"], fmask)
            return joint_log_ratio(params, z[0], q_beta[0], log_pi[0], sigma2[0], data, priors, monotone)

        batch = max(1, min(n_draws, KHAT_BATCH_CELLS // max(data["y_obs"].size, 1)))
        return jax.lax.map(one, jax.random.split(key, n_draws), batch_size=batch)

    return jax.jit(ratios)


def log_ratios(key, params, problem: Problem, settings: BBVISettings, n_draws: int = KHAT_DRAWS) -> np.ndarray:
    """Log importance ratios (:func:`joint_log_ratio`) of joint draws of BBVI's approximation
    q(Z) q(beta) q(pi) q(sigma^2): the input of the fit's PSIS k-hat (``inference.variational.psis``).

    The profiles are drawn from q(Z_i), not summed out. Summing them out of both p and q
    (exact, and the ratios quieter) gives log p(y, beta, pi, sigma^2) - log q(beta, pi, sigma^2),
    which judges q(beta, pi, sigma^2) as an approximation of the collapsed posterior, what
    collapsed VI's ELBO targets; BBVI's ELBO targets the joint posterior of profiles and
    parameters with q(Z_i) free and independent of the parameters, and the collapsed ratio
    would leave that q(Z_i), whose profile probabilities the fit reports, out of the check.

    Each draw is one call of ``bbvi_family.draw`` (M = 1) with its own key of
    ``jax.random.split(key, n_draws)``.

    Parameters
    ----------
    key : jax.Array
        PRNG key of the draws.
    params : dict
        The fit's variational parameters.
    problem : Problem
        The data set (``prepare``).
    settings : BBVISettings
        The fit's settings (priors, monotonicity).
    n_draws : int
        S, joint draws.

    Returns
    -------
    numpy.ndarray
        (S,) log ratios, float32.
    """
    program = _log_ratios_program(settings.priors, bool(settings.monotone), int(n_draws))
    return np.asarray(program(params, key, problem.data))
