"""The sub-models of the stacking imputation model: their data, and each one's Bayesian fit.

Every (target t, predictor slot j) pair is a cumulative-logit regression of Y_t on Y_j (the
intercept-only model when j == t); this module builds what they are fitted on (contingency
tables, design rows, starting values) and fits all of them at once (:func:`fit_all`), leaving
PSIS-LOO and the stacking to ``imputation.stacking``.

* **Ordinal likelihood: the project's one GRM core.** A cumulative-logit regression is
  P(Y_i >= k | x) = sigmoid(x.beta - c_k) with increasing cuts c, which is exactly
  ``models.grm.category_log_probs`` with score x.beta; cuts are ``grm.ordered_cuts`` of a free
  first cut and softplus-positive increments.
* **Sufficient statistics.** Given the predictor's category a and the target's category b,
  every person in cell (a, b) has the same likelihood term, so each sub-model's likelihood is
  a weighted sum over its K_j x K_i contingency table. Fitting cost does not grow with persons.
* **Bayesian fit by a Laplace approximation** (a fast approach is required: 484 models for
  RWA within minutes on 2 cores): a damped Newton search for the posterior mode on the
  unconstrained scale, vectorised with ``vmap`` over all (i, j) and jitted, then Gaussian
  draws from N(mode, H^-1). With thousands of observations and at most 17 parameters the
  posterior is close to Gaussian; each sub-model reports whether Newton converged (remaining
  step < 1% of a posterior sd, Hessian positive definite) and the Pareto k-hat of importance
  weights posterior/Laplace (PSIS from ArviZ), which flags a poor Gaussian approximation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.imputation.stacking_settings import StackingSettings
from bayesirt.models import grm


def contingency_tables(responses: np.ndarray, n_categories: np.ndarray) -> np.ndarray:
    """counts[t, j, a, k] = persons with Y_j = a and Y_t = k, both observed; on the diagonal
    (j == t) the target's own marginal counts sit in row a = 0."""
    y = np.asarray(responses)
    kmax = int(np.max(n_categories))
    onehot = (y[..., None] == np.arange(kmax)).astype(np.float32)  # missing (-1) -> all zero
    n_items = y.shape[1]
    flat = onehot.reshape(y.shape[0], n_items * kmax)
    joint = (flat.T @ flat).reshape(n_items, kmax, n_items, kmax)  # [j, a, t, k]
    counts = np.transpose(joint, (2, 0, 1, 3)).copy()  # [t, j, a, k]
    marg = onehot.sum(0)  # (I, K)
    for t in range(n_items):
        counts[t, t] = 0.0
        counts[t, t, 0] = marg[t]
    return counts


def design_matrices(responses: np.ndarray, n_categories: np.ndarray, predictor: str) -> np.ndarray:
    """Predictor rows per (target, predictor slot, predictor category): (I, I, Kmax, P).

    numeric: the category standardised by the predictor item's observed mean and sd (P = 1);
    onehot: indicators of categories 1..Kmax-1 (category 0 is the baseline; P = Kmax - 1).
    The intercept-only slot (j == t) has an all-zero design.
    """
    y = np.asarray(responses)
    n_items = y.shape[1]
    kmax = int(np.max(n_categories))
    if predictor == "numeric":
        per_item = np.zeros((n_items, kmax, 1), np.float32)
        for j in range(n_items):
            obs = y[:, j][y[:, j] >= 0].astype(np.float64)
            mean = obs.mean() if obs.size else 0.0
            sd = obs.std() if obs.size > 1 and obs.std() > 0 else 1.0
            per_item[j, :, 0] = (np.arange(kmax) - mean) / sd
    elif predictor == "onehot":
        per_item = np.broadcast_to(np.eye(kmax, dtype=np.float32)[:, 1:], (n_items, kmax, kmax - 1)).copy()
    else:
        raise ValueError(f"stacking setting 'predictor' must be 'numeric' or 'onehot', got {predictor!r}")
    design = np.broadcast_to(per_item[None], (n_items,) + per_item.shape).copy()
    design[np.arange(n_items), np.arange(n_items)] = 0.0
    return design


def initial_parameters(counts: np.ndarray, n_slopes: int) -> np.ndarray:
    """Start each sub-model at slope 0 and the cuts of the target's marginal proportions."""
    n_items, _, _, kmax = counts.shape
    marg = counts[np.arange(n_items), np.arange(n_items), 0]  # (I, K)
    total = np.maximum(marg.sum(-1, keepdims=True), 1.0)
    at_least = np.clip(1.0 - np.cumsum(marg, -1)[:, :-1] / total, 0.5 / total, 1 - 0.5 / total)
    cuts = -np.log(at_least / (1 - at_least))  # P(Y >= k) = sigmoid(-c_k) at score 0
    cuts = np.maximum.accumulate(cuts, axis=-1)
    gaps = np.maximum(np.diff(cuts, axis=-1), 0.05)
    raw = np.log(np.expm1(gaps))  # softplus inverse
    u = np.concatenate([np.zeros((n_items, n_slopes)), cuts[:, :1], raw], axis=-1)
    return np.broadcast_to(u[:, None], (n_items, n_items, u.shape[-1])).astype(np.float32).copy()


def _unpack(u, n_slopes):
    beta = u[:n_slopes]
    cuts = grm.ordered_cuts(u[n_slopes], jax.nn.softplus(u[n_slopes + 1 :]))
    return beta, cuts


def _table_log_probs(u, design, n_cat, n_slopes):
    """(Kmax, Kmax) log P(Y_t = k | predictor category a) of one sub-model."""
    beta, cuts = _unpack(u, n_slopes)
    score = design @ beta  # (Kmax,) one score per predictor category
    lp = grm.category_log_probs(score[:, None], cuts[None], n_cat[None])  # (Ka, 1, K)
    return lp[:, 0, :]


def _log_prior(u, n_slopes, s: StackingSettings):
    beta, first, raw = u[:n_slopes], u[n_slopes], u[n_slopes + 1 :]
    gaps = jax.nn.softplus(raw)
    lp = -0.5 * jnp.sum((beta / s.slope_scale) ** 2) - 0.5 * (first / s.first_cut_scale) ** 2
    # HalfNormal on the gaps plus log|d softplus / d raw| = log sigmoid(raw)
    lp = lp - 0.5 * jnp.sum((gaps / s.increment_scale) ** 2) + jnp.sum(jax.nn.log_sigmoid(raw))
    return lp


def _log_posterior(u, counts, design, n_cat, n_slopes, s):
    lp = _table_log_probs(u, design, n_cat, n_slopes)
    loglik = jnp.sum(jnp.where(counts > 0, counts * jnp.where(counts > 0, lp, 0.0), 0.0))
    return loglik + _log_prior(u, n_slopes, s)


def _newton_fit(u0, counts, design, n_cat, n_slopes, s: StackingSettings):
    """Posterior mode by damped (eigenvalue-modified) Newton with a backtracking grid."""
    f = lambda u: -_log_posterior(u, counts, design, n_cat, n_slopes, s)
    grad = jax.grad(f)
    hess = jax.hessian(f)
    steps = 0.5 ** jnp.arange(10)

    def direction(u):
        g, h = grad(u), hess(u)
        lam, vec = jnp.linalg.eigh(h)
        lam = jnp.maximum(jnp.abs(lam), 1e-6 * jnp.max(jnp.abs(lam)) + 1e-8)
        return -(vec @ ((vec.T @ g) / lam))

    def body(u, _):
        d = direction(u)
        f0 = f(u)
        trial = jax.vmap(lambda t: f(u + t * d))(steps)
        # float32 cannot resolve changes of f below a few ulps of |f| (~1e-3 for 10^4
        # observations), which near the mode are larger than the remaining decrease: steps
        # within that resolution are accepted, where the Newton step is reliable anyway.
        ok = jnp.isfinite(trial) & (trial <= f0 + 8 * jnp.finfo(f0.dtype).eps * jnp.abs(f0))
        best = jnp.argmax(ok)  # first (largest) step that does not increase f
        u_new = jnp.where(jnp.any(ok), u + steps[best] * d, u)
        return u_new, None

    u, _ = jax.lax.scan(body, u0, None, length=s.newton_steps)
    g, h = grad(u), hess(u)
    lam, vec = jnp.linalg.eigh(h)
    pos_def = jnp.all(lam > 0)
    cov = vec @ jnp.diag(1.0 / jnp.maximum(lam, 1e-12)) @ vec.T
    step = cov @ g
    sd = jnp.sqrt(jnp.diag(cov))
    converged = pos_def & jnp.all(jnp.isfinite(u)) & (jnp.max(jnp.abs(step) / sd) < 0.01)
    return u, cov, converged


def _laplace_draws(key, u, cov, counts, design, n_cat, n_slopes, s: StackingSettings):
    """Draws from N(u, cov), their (Ka, K) log-probability tables, and log(p/q) weights."""
    dim = u.shape[0]
    chol = jnp.linalg.cholesky(cov + 1e-9 * jnp.eye(dim))
    z = jax.random.normal(key, (s.n_draws, dim), u.dtype)
    draws = u + z @ chol.T
    tables = jax.vmap(lambda v: _table_log_probs(v, design, n_cat, n_slopes))(draws)
    log_p = jax.vmap(lambda v: _log_posterior(v, counts, design, n_cat, n_slopes, s))(draws)
    log_q = -0.5 * jnp.sum(z**2, -1)  # up to a constant, which PSIS ignores
    return tables, log_p - log_q


def fit_all(key, u0, counts, design, n_cat_target, n_slopes, s: StackingSettings):
    """vmap over all (target, predictor) pairs: mode, covariance, convergence, draw tables."""

    def one(k, u0_, c, d, nc):
        u, cov, conv = _newton_fit(u0_, c, d, nc, n_slopes, s)
        tables, log_w = _laplace_draws(k, u, cov, c, d, nc, n_slopes, s)
        pmf = jnp.exp(tables).mean(0)  # posterior predictive
        return conv, tables, log_w, pmf

    n_items = counts.shape[0]
    keys = jax.random.split(key, n_items * n_items).reshape(n_items, n_items)
    nc = jnp.broadcast_to(n_cat_target[:, None], (n_items, n_items))
    inner = jax.vmap(one)
    return jax.vmap(inner)(keys, u0, counts, design, nc)
