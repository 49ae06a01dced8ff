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

``monotone`` (the LCDM's monotonicity option, as in ``inference.dcm.collapsed_vi``): the likelihood
is maximised over monotone items only, main effects >= 0 and a two-attribute item's interaction
>= -min(main effects), through the same parameterisation ``beta = models.lcdm.monotone_beta(u)``
(softplus of unconstrained ``u``). Why a reparameterisation rather than a projected Newton step:
the feasible set of a two-attribute item is a cone with four faces in three coefficients (a
polyhedral cone, not a box), so a projection is itself a small quadratic programme per item and
step; in ``u`` every M-step stays an unconstrained problem of the existing shape (Newton steps on
K <= 4 coordinates, all items at once). The objective in ``u`` need not be concave, so the step
is Gauss-Newton (the transform's curvature dropped: ``J^T H_beta J`` is negative definite)
with step halving that never lowers the item's expected complete-data log-likelihood, which
keeps the EM a generalised EM. A coefficient at its boundary is reached as ``u -> -inf``; ``u``
is floored at ``U_FLOOR`` (softplus(-12) = 6e-6), which keeps the gradient alive so that it can
leave the boundary again when a later E-step asks for it. Standard errors of a constrained fit
are those of the model restricted to the face of the constraints it sits on (the information
pulled back through ``d beta / d u`` with the coordinates at the floor dropped), equal to the
unconstrained ones in the interior; a coefficient on its boundary gets NaN (no Wald interval).
"""

from __future__ import annotations

import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.dcm.bbvi import Problem
from bayesirt.models import lcdm


class EMSettings(NamedTuple):
    """Settings of :func:`fit`.

    Attributes
    ----------
    max_iter : int
        Most EM iterations.
    tol : float
        Convergence: the largest change of any coefficient and of any profile probability is
    below ``tol``.
    newton_steps : int
        Newton steps per M-step.
    ridge : float
        Ridge penalty on the coefficients.
    standard_errors : bool
        Whether to compute standard errors at the estimate.
    monotone : bool
        Main effects >= 0 (``models.lcdm.monotone_beta``), as collapsed VI's option.
    """

    max_iter: int = 1000
    tol: float = 1e-4
    newton_steps: int = 2
    ridge: float = 1e-4
    standard_errors: bool = True
    monotone: bool = False  # main effects >= 0 (models.lcdm.monotone_beta), as collapsed VI's option


class EMResult(NamedTuple):
    """Result of :func:`fit`.

    Attributes
    ----------
    beta : numpy.ndarray (J, K)
        Coefficients, padded.
    log_pi : numpy.ndarray (L,)
        Profile log-probabilities.
    log_posterior : numpy.ndarray (N, L)
        log p(z_i = l | y_i) at the estimates.
    loglik : float
        Marginal log-likelihood at the estimates.
    n_iter : int
        EM iterations run.
    converged : bool
        Whether the tolerance was reached.
    reason : str
        How the iterations ended.
    wall_seconds : float
        Wall time.
    compile_seconds : float
        Compilation time.
    beta_se : numpy.ndarray (J, K) or None
        Standard errors, NaN in padding.
    pi_se : numpy.ndarray (L,) or None
        Standard errors of the profile probabilities.
    u : numpy.ndarray (J, K) or None
        Monotone fits: the unconstrained coordinates of beta.
    """

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
    u: np.ndarray | None = None  # (J, K) monotone fits: the unconstrained coordinates of beta


# monotone M-step: the floor of u (softplus(-12) = 6e-6 from the boundary), the largest Newton
# step in u (the largest coordinate of the step), and the step-halving candidates 1, 1/2, ..., 2^-(N_HALVINGS - 1)
U_FLOOR = -12.0
MAX_U_STEP = 4.0
N_HALVINGS = 12
# Levenberg term of the Gauss-Newton matrix in u (keeps it invertible when a coordinate sits at
# the floor, where d beta / d u ~ 6e-6)
GN_DAMPING = 1e-6


def init_beta(design: lcdm.Design) -> np.ndarray:
    """Monotone start of the coefficients.

    Intercept -1, main effects 2 split among the measured attributes, higher orders 0 (fixes
    the labelling of the profiles: masters answer better).

    Parameters
    ----------
    design : lcdm.Design
        The Q-matrix's design.

    Returns
    -------
    numpy.ndarray
        Coefficients (J, K), padded.
    """
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


def _item_beta(u_j, order_j, mask_j):
    """One item's coefficients from its unconstrained coordinates (``lcdm.monotone_beta``)."""
    return lcdm.monotone_beta(u_j[None], order_j[None])[0][0] * mask_j


def _m_step_item_monotone(u_j, delta_j, mask_j, order_j, n_j, s_j, ridge, steps):
    """Damped Gauss-Newton steps in u for one item's weighted logistic regression with monotone
    coefficients (see the module docstring for why this form)."""
    constrained = order_j >= 1

    def objective(u):
        b = _item_beta(u, order_j, mask_j)
        eta = delta_j @ b
        return jnp.sum(s_j * jax.nn.log_sigmoid(eta) + (n_j - s_j) * jax.nn.log_sigmoid(-eta)) - 0.5 * ridge * jnp.sum(
            b**2
        )

    def newton(u, _):
        b = _item_beta(u, order_j, mask_j)
        p = jax.nn.sigmoid(delta_j @ b)
        jac = jax.jacfwd(_item_beta)(u, order_j, mask_j)  # (K, K) d beta / d u
        grad = jac.T @ (delta_j.T @ (s_j - n_j * p) - ridge * b)
        h_beta = (delta_j.T * (n_j * p * (1 - p))) @ delta_j + jnp.diag(ridge * mask_j)
        h = jac.T @ h_beta @ jac + jnp.diag(GN_DAMPING * mask_j + (1 - mask_j))
        direction = mask_j * jnp.linalg.solve(h, grad)
        # shrunk as a whole (an elementwise clip would turn it away from the ascent direction)
        direction = direction * jnp.minimum(1.0, MAX_U_STEP / jnp.maximum(jnp.max(jnp.abs(direction)), 1e-30))
        # the largest of 1, 1/2, 1/4, ... that does not lower the objective; none: stay
        ts = 0.5 ** jnp.arange(N_HALVINGS)
        vals = jax.vmap(
            lambda t: objective(jnp.where(constrained, jnp.maximum(u + t * direction, U_FLOOR), u + t * direction))
        )(ts)
        ok = vals >= objective(u)
        t = jnp.where(ok.any(), ts[jnp.argmax(ok)], 0.0)
        new = u + t * direction
        return jnp.where(constrained, jnp.maximum(new, U_FLOOR), new), None

    return jax.lax.scan(newton, u_j, None, length=steps)[0]


def _em_loop(params, log_pi, delta, mask, order, y_obs, n_obs, max_iter, tol, ridge, newton_steps, monotone):
    """EM from ``params``: beta, or with ``monotone`` the unconstrained u of
    ``lcdm.monotone_beta`` (convergence is judged on beta either way)."""
    observed = y_obs + n_obs

    def coef(p):
        return lcdm.monotone_beta(p, order)[0] * mask if monotone else p

    def step(p, log_pi):
        log_post = lcdm.posterior_profiles(coef(p), log_pi, delta, y_obs, n_obs)
        post = jnp.exp(log_post)
        n = jnp.einsum("nl,nj->jl", post, observed)
        s = jnp.einsum("nl,nj->jl", post, y_obs)
        if monotone:
            new_p = jax.vmap(_m_step_item_monotone, (0, 0, 0, 0, 0, 0, None, None))(
                p, delta, mask, order, n, s, ridge, newton_steps
            )
        else:
            new_p = jax.vmap(_m_step_item, (0, 0, 0, 0, 0, None, None))(p, delta, mask, n, s, ridge, newton_steps)
        new_log_pi = jax.nn.log_softmax(jnp.log(post.mean(0) + 1e-30))
        return new_p, new_log_pi

    def cond(c):
        _, _, change, it = c
        return (change > tol) & (it < max_iter)

    def body(c):
        p, log_pi, _, it = c
        np_, nl = step(p, log_pi)
        change = jnp.maximum(jnp.max(jnp.abs(coef(np_) - coef(p))), jnp.max(jnp.abs(jnp.exp(nl) - jnp.exp(log_pi))))
        return np_, nl, change, it + 1

    p, log_pi, change, it = jax.lax.while_loop(cond, body, (params, log_pi, jnp.inf, 0))
    beta = coef(p)
    ll = lcdm.marginal_loglik(beta, log_pi, delta, y_obs, n_obs).sum()
    return p, beta, log_pi, change, it, ll


_em_jit = jax.jit(_em_loop, static_argnames=("max_iter", "newton_steps", "monotone"))


@jax.jit
def standard_errors(beta, log_pi, delta, mask, y_obs, n_obs, ridge=0.0, u=None, order=None):
    """Standard errors from the observed information of the (penalised) marginal log-likelihood.

    Padded coefficients get NaN. With ``u`` and ``order`` (a monotone fit): the information
    pulled back to ``u`` through ``G = d beta / d u``, coordinates at ``U_FLOOR`` held fixed, and
    ``cov(beta) = G cov(u) G^T`` (equal to the plain one in the interior); coefficients on their
    boundary get NaN.

    Parameters
    ----------
    beta : array (J, K)
        Coefficients.
    log_pi : array (L,)
        Profile log-probabilities.
    delta : array
        The design's indicator of which coefficients enter each (item, profile).
    mask : array (J, K)
        Real (unpadded) coefficients.
    y_obs, n_obs : array
        Observed-response statistics of the data.
    ridge : float
        Ridge penalty.
    u : array (J, K), optional
        Unconstrained coordinates (monotone fits).
    order : array (J, K), optional
        Orders of the coefficients (monotone fits).

    Returns
    -------
    tuple of jax.Array
        ``beta_se`` (J, K) and ``pi_se`` (L,).
    """
    j, k = beta.shape
    n_prof = log_pi.shape[0]
    theta = jnp.concatenate([beta.ravel(), log_pi - log_pi[0]])

    def objective(t):
        b = t[: j * k].reshape(j, k) * mask
        lp = jax.nn.log_softmax(t[j * k :])
        return lcdm.marginal_loglik(b, lp, delta, y_obs, n_obs).sum() - 0.5 * ridge * jnp.sum(b**2)

    hess = jax.hessian(objective)(theta)
    free_beta = mask
    g = jnp.eye(j * k + n_prof)
    if u is not None:
        jac = jax.vmap(jax.jacfwd(_item_beta))(u, order, mask)  # (J, K, K)
        at_floor = (order >= 1) & (u <= U_FLOOR + 1e-3)
        free_beta = mask * ~at_floor
        g = g.at[: j * k, : j * k].set((jnp.eye(j)[:, None, :, None] * jac[:, :, None, :]).reshape(j * k, j * k))
    free = jnp.concatenate([free_beta.ravel(), jnp.zeros(1), jnp.ones(n_prof - 1)])
    info = -(g.T @ hess @ g) * free[:, None] * free[None, :] + jnp.diag(1 - free)
    cov = g @ (jnp.linalg.inv(info) * free[:, None] * free[None, :]) @ g.T
    beta_var = jnp.diag(cov)[: j * k].reshape(j, k)
    beta_se = jnp.where((mask > 0) & (free_beta > 0), jnp.sqrt(jnp.maximum(beta_var, 0)), jnp.nan)
    pi = jnp.exp(jax.nn.log_softmax(theta[j * k :]))
    jac = jnp.diag(pi) - jnp.outer(pi, pi)  # d pi / d logits
    cov_l = cov[j * k :, j * k :]
    pi_se = jnp.sqrt(jnp.maximum(jnp.diag(jac @ cov_l @ jac.T), 0))
    return beta_se, pi_se


def fit(
    key, problem: Problem, settings: EMSettings = EMSettings(), *, init: dict | None = None, label: str = "em"
) -> EMResult:
    """EM marginal maximum likelihood of the LCDM.

    Parameters
    ----------
    key : jax.Array or None
        Unused: the method is deterministic; accepted so that every fit is called the same way.
    problem : bbvi.Problem
        The data and the model's structure together: responses (N, J; 0/1, missing -1) and the
        Q-matrix's design, as ``bbvi.prepare(y, q)`` builds them.
    settings : EMSettings
        Iteration limit, tolerance, Newton steps per M-step, ridge, standard errors, and
        monotonicity (coefficients inside the monotone constraints).
    init : dict, optional
        Starting values: ``"beta"`` (J, K) padded coefficients (moved inside the constraints
        first when monotone) and/or ``"log_pi"`` (L,); by default ``init_beta`` and uniform
        profile probabilities.
    label : str
        Unused (the fit logs nothing); accepted for the common calling convention.

    Returns
    -------
    EMResult
        Coefficients, profile log-probabilities, per-person profile posteriors, the
        log-likelihood, convergence, timings and (with ``standard_errors``) standard errors.
    """
    init = init or {}
    beta_init, log_pi_init = init.get("beta"), init.get("log_pi")
    des = problem.design
    if settings.monotone:
        lcdm.check_monotone_design(des)
    y_obs, n_obs = problem.data["y_obs"], problem.data["n_obs"]
    delta = jnp.asarray(des.delta, jnp.float32)
    mask = jnp.asarray(des.feature_mask, jnp.float32)
    order = jnp.asarray(des.order, jnp.int32)
    beta0 = init_beta(des) if beta_init is None else np.asarray(beta_init)
    if settings.monotone:
        beta0 = lcdm.monotone_u(beta0, des.order) * des.feature_mask
    beta0 = jnp.asarray(beta0, jnp.float32)
    n_prof = des.delta.shape[1]
    lp0 = jnp.full(n_prof, -np.log(n_prof), jnp.float32) if log_pi_init is None else jnp.asarray(log_pi_init)
    args = (beta0, lp0, delta, mask, order, y_obs, n_obs)
    statics = dict(max_iter=settings.max_iter, newton_steps=settings.newton_steps, monotone=settings.monotone)
    t0 = time.perf_counter()
    compiled = _em_jit.lower(*args, tol=settings.tol, ridge=settings.ridge, **statics).compile()
    compile_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    p, beta, log_pi, change, it, ll = jax.block_until_ready(compiled(*args, tol=settings.tol, ridge=settings.ridge))
    wall = time.perf_counter() - t0
    converged = bool(change <= settings.tol)
    reason = (
        f"largest parameter change {float(change):.2e} <= tol {settings.tol:g} after {int(it)} iterations"
        if converged
        else f"reached max_iter={settings.max_iter} (largest change {float(change):.2e})"
    )
    log_post = lcdm.posterior_profiles(beta, log_pi, delta, y_obs, n_obs)
    u = p if settings.monotone else None
    beta_se = pi_se = None
    if settings.standard_errors:
        extra = dict(u=u, order=order) if settings.monotone else {}
        beta_se, pi_se = (
            np.asarray(a) for a in standard_errors(beta, log_pi, delta, mask, y_obs, n_obs, settings.ridge, **extra)
        )
    return EMResult(
        np.asarray(beta),
        np.asarray(log_pi),
        np.asarray(log_post),
        float(ll),
        int(it),
        converged,
        reason,
        wall,
        compile_seconds,
        beta_se,
        pi_se,
        None if u is None else np.asarray(u),
    )
