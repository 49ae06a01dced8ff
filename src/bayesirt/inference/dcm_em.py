"""EM marginal maximum likelihood for the LCDM: the estimator of the standard DCM packages.

E-step: posterior profile probabilities of every person, ``log p(z_i = l | y_i)``, in log space
(``models.lcdm.posterior_profiles``; missing responses contribute nothing). M-step: the profile
probabilities are the mean posterior; each item's coefficients maximise its expected
complete-data log-likelihood ``sum_l s_jl log sig(eta_jl) + (n_jl - s_jl) log sig(-eta_jl)``
(``n_jl`` expected observed answers of profile l, ``s_jl`` expected correct ones), a weighted
logistic regression on L rows that we solve by Newton steps, all items at once (``vmap``). A
generalised EM (a fixed number of Newton steps per M-step) still increases the likelihood at
every iteration. The whole loop is one ``lax.while_loop``.

Convergence: the largest change of any coefficient and of any profile probability is below
``tol``. Standard errors: from the observed information, the Hessian of the marginal
log-likelihood in (beta, profile logits with the first fixed at 0), by automatic
differentiation; profile-probability errors by the delta method.

``ridge`` adds ``-ridge/2 |beta|^2`` to the objective (a penalised ML): zero gives plain ML,
a small value keeps a coefficient finite when a profile group answers an item all right or all
wrong.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models import lcdm


class EMSettings(NamedTuple):
    max_iter: int = 1000
    tol: float = 1e-4
    newton_steps: int = 2
    ridge: float = 1e-4
    standard_errors: bool = True


class EMResult(NamedTuple):
    beta: np.ndarray  # (J, K) padded
    log_pi: np.ndarray  # (L,)
    log_posterior: np.ndarray  # (N, L) log p(z_i = l | y_i) at the estimates
    loglik: float
    n_iter: int
    converged: bool
    reason: str
    wall_seconds: float
    compile_seconds: float
    beta_se: np.ndarray | None  # (J, K), NaN in padding
    pi_se: np.ndarray | None  # (L,)


def init_beta(design: lcdm.Design) -> np.ndarray:
    """Monotone start: intercept -1, main effects 2 split among the measured attributes, higher
    orders 0 (fixes the labelling of the profiles: masters answer better)."""
    n_main = (design.order == 1).sum(1, keepdims=True)
    return np.where(design.order == 0, -1.0, np.where(design.order == 1, 2.0 / np.maximum(n_main, 1), 0.0))


def _m_step_item(beta_j, delta_j, mask_j, n_j, s_j, ridge, steps):
    """Newton steps for one item's weighted logistic regression on its L profile rows."""
    def newton(b, _):
        eta = delta_j @ b
        p = jax.nn.sigmoid(eta)
        grad = delta_j.T @ (s_j - n_j * p) - ridge * b * mask_j
        w = n_j * p * (1 - p)
        hess = (delta_j.T * w) @ delta_j + jnp.diag(ridge * mask_j + (1 - mask_j))
        return b + mask_j * jnp.linalg.solve(hess, grad), None
    return jax.lax.scan(newton, beta_j, None, length=steps)[0]


def _em_loop(beta, log_pi, delta, mask, y_obs, n_obs, max_iter, tol, ridge, newton_steps):
    observed = y_obs + n_obs

    def step(beta, log_pi):
        log_post = lcdm.posterior_profiles(beta, log_pi, delta, y_obs, n_obs)
        post = jnp.exp(log_post)
        n = jnp.einsum("nl,nj->jl", post, observed)
        s = jnp.einsum("nl,nj->jl", post, y_obs)
        new_beta = jax.vmap(_m_step_item, (0, 0, 0, 0, 0, None, None))(beta, delta, mask, n, s, ridge, newton_steps)
        new_log_pi = jax.nn.log_softmax(jnp.log(post.mean(0) + 1e-30))
        return new_beta, new_log_pi

    def cond(c):
        _, _, change, it = c
        return (change > tol) & (it < max_iter)

    def body(c):
        beta, log_pi, _, it = c
        nb, nl = step(beta, log_pi)
        change = jnp.maximum(jnp.max(jnp.abs(nb - beta)), jnp.max(jnp.abs(jnp.exp(nl) - jnp.exp(log_pi))))
        return nb, nl, change, it + 1

    beta, log_pi, change, it = jax.lax.while_loop(cond, body, (beta, log_pi, jnp.inf, 0))
    ll = lcdm.marginal_loglik(beta, log_pi, delta, y_obs, n_obs).sum()
    return beta, log_pi, change, it, ll


_em_jit = jax.jit(_em_loop, static_argnames=("max_iter", "newton_steps"))


@jax.jit
def standard_errors(beta, log_pi, delta, mask, y_obs, n_obs, ridge=0.0):
    """(beta_se (J, K), pi_se (L,)) from the observed information of the (penalised) marginal
    log-likelihood; padded coefficients get NaN."""
    j, k = beta.shape
    n_prof = log_pi.shape[0]
    theta = jnp.concatenate([beta.ravel(), log_pi - log_pi[0]])

    def objective(t):
        b = t[:j * k].reshape(j, k) * mask
        lp = jax.nn.log_softmax(t[j * k:])
        return lcdm.marginal_loglik(b, lp, delta, y_obs, n_obs).sum() - 0.5 * ridge * jnp.sum(b ** 2)

    hess = jax.hessian(objective)(theta)
    free = jnp.concatenate([mask.ravel(), jnp.zeros(1), jnp.ones(n_prof - 1)])
    info = -hess * free[:, None] * free[None, :] + jnp.diag(1 - free)
    cov = jnp.linalg.inv(info) * free[:, None] * free[None, :]
    beta_var = jnp.diag(cov)[:j * k].reshape(j, k)
    beta_se = jnp.where(mask > 0, jnp.sqrt(jnp.maximum(beta_var, 0)), jnp.nan)
    pi = jnp.exp(jax.nn.log_softmax(theta[j * k:]))
    jac = jnp.diag(pi) - jnp.outer(pi, pi)  # d pi / d logits
    cov_l = cov[j * k:, j * k:]
    pi_se = jnp.sqrt(jnp.maximum(jnp.diag(jac @ cov_l @ jac.T), 0))
    return beta_se, pi_se


def fit_em(y, q, settings: EMSettings = EMSettings(), beta_init=None, log_pi_init=None,
           allow_zero_rows: bool = False) -> EMResult:
    """EM for responses ``y`` (N, J; 0/1, missing -1) and Q-matrix ``q`` (J, A)."""
    y = lcdm.check_responses(y)
    q = lcdm.check_q_matrix(q, y.shape[1], allow_zero_rows=allow_zero_rows)
    lcdm.check_size(y.shape[0], q.shape[1])
    des = lcdm.design(q)
    y_obs, n_obs = lcdm.observed_counts(y)
    delta = jnp.asarray(des.delta, jnp.float32)
    mask = jnp.asarray(des.feature_mask, jnp.float32)
    beta0 = jnp.asarray(init_beta(des) if beta_init is None else beta_init, jnp.float32)
    n_prof = des.delta.shape[1]
    lp0 = jnp.full(n_prof, -np.log(n_prof), jnp.float32) if log_pi_init is None else jnp.asarray(log_pi_init)
    args = (beta0, lp0, delta, mask, y_obs, n_obs)
    statics = dict(max_iter=settings.max_iter, newton_steps=settings.newton_steps)
    t0 = time.perf_counter()
    compiled = _em_jit.lower(*args, tol=settings.tol, ridge=settings.ridge, **statics).compile()
    compile_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    beta, log_pi, change, it, ll = jax.block_until_ready(compiled(*args, tol=settings.tol, ridge=settings.ridge))
    wall = time.perf_counter() - t0
    converged = bool(change <= settings.tol)
    reason = (f"largest parameter change {float(change):.2e} <= tol {settings.tol:g} after {int(it)} iterations"
              if converged else f"reached max_iter={settings.max_iter} (largest change {float(change):.2e})")
    log_post = lcdm.posterior_profiles(beta, log_pi, delta, y_obs, n_obs)
    beta_se = pi_se = None
    if settings.standard_errors:
        beta_se, pi_se = (np.asarray(a) for a in standard_errors(beta, log_pi, delta, mask, y_obs, n_obs, settings.ridge))
    return EMResult(np.asarray(beta), np.asarray(log_pi), np.asarray(log_post), float(ll), int(it), converged,
                    reason, wall, compile_seconds, beta_se, pi_se)
