"""The stacking weights of the stacking imputation model, from its sub-models' PSIS-LOO densities.

Stacking weights (Yao et al. 2018) maximise, per target item, the sum over the persons
who answered it of log sum_m w_m p_loo(y_n | m) over the usable models m, with the weights
renormalised over the usable models (the same mixture that imputes). Weights are a softmax
of free logits; the objective (jax, with gradient) is maximised by scipy's L-BFGS-B with a
tiny ridge on the logits that only removes the softmax's shift invariance.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def _usable(y: np.ndarray) -> np.ndarray:
    """(N, I_target, I_slot): model (t, j) is usable for person n if Y_nj is observed or j == t."""
    obs = y >= 0
    n_items = y.shape[1]
    return obs[:, None, :] | np.eye(n_items, dtype=bool)[None]


def _slot_category(y: np.ndarray) -> np.ndarray:
    """(N, I_target, I_slot): the predictor category each model sees (0 for the intercept slot)."""
    n_items = y.shape[1]
    a = np.broadcast_to(np.clip(y, 0, None)[:, None, :], (y.shape[0], n_items, n_items)).copy()
    a[:, np.arange(n_items), np.arange(n_items)] = 0
    return a


def stacking_weights(y: np.ndarray, loo_cell: np.ndarray, ridge: float) -> np.ndarray:
    """Stacking weights per target item from the per-cell LOO log predictive densities."""
    # here, not at the top: importing scipy.optimize takes about 0.4 s, which the jobs
    # that only load a fitted model and impute with it (imputation.stacking) need not spend
    from scipy.optimize import minimize

    n, n_items = y.shape
    usable = _usable(y)
    a = _slot_category(y)
    k = np.clip(y, 0, None)[:, :, None]  # target category
    t_idx = np.arange(n_items)[None, :, None]
    j_idx = np.arange(n_items)[None, None, :]
    lpd = loo_cell[t_idx, j_idx, a, k]  # (N, I, I)
    usable = usable & (y >= 0)[:, :, None] & np.isfinite(lpd)
    lpd = np.where(usable, lpd, 0.0)
    # shift per (person, target) so the exps stay in range; the shift is a constant
    shift = np.where(usable, lpd, -np.inf).max(-1, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    dens = np.where(usable, np.exp(lpd - shift), 0.0).astype(np.float64)
    answered = (y >= 0).astype(np.float64)  # (N, I): which persons count for each target
    n_ans = np.maximum(answered.sum(0), 1.0)

    dens_j, usable_j, answered_j = (
        jnp.asarray(dens, jnp.float32),
        jnp.asarray(usable, jnp.float32),
        jnp.asarray(answered, jnp.float32),
    )
    n_ans_j = jnp.asarray(n_ans, jnp.float32)

    @jax.jit
    def objective(z):
        z = z.reshape(n_items, n_items)
        w = jax.nn.softmax(z, axis=-1)[None]  # (1, I, I)
        num = jnp.sum(w * dens_j, -1)
        den = jnp.sum(w * usable_j, -1)
        term = jnp.where(answered_j > 0, jnp.log(jnp.maximum(num, 1e-30)) - jnp.log(jnp.maximum(den, 1e-30)), 0.0)
        per_item = term.sum(0) / n_ans_j
        return -per_item.sum() + ridge * jnp.sum(z**2)

    value_and_grad = jax.jit(jax.value_and_grad(objective))

    def fun(z):
        v, g = value_and_grad(jnp.asarray(z, jnp.float32))
        return float(v), np.asarray(g, np.float64)

    res = minimize(
        fun, np.zeros(n_items * n_items), jac=True, method="L-BFGS-B", options={"maxiter": 500, "gtol": 1e-7}
    )
    w = np.asarray(jax.nn.softmax(jnp.asarray(res.x.reshape(n_items, n_items)), axis=-1), np.float64)
    return w / w.sum(-1, keepdims=True)
