"""Marginal maximum likelihood for the unidimensional 2PL by Gauss-Hermite quadrature (EM).

The point-estimate anchor of the VIBO study (seed 004): item parameters maximise

    log L(a, d) = sum_i log sum_q w_q prod_j P(y_ij | theta_q; a_j, d_j),   theta ~ N(0, 1),

with ``eta = a * theta - d`` (the project's 2PL), by Bock-Aitkin EM: the E-step gives each
person's posterior weights on the quadrature nodes (a persons x nodes matrix, from two matrix
products of the response indicators with log P and log(1 - P)); the M-step is, per item, a
weighted logistic regression of the expected counts at the nodes, solved by a few Newton steps
for all items at once (2 x 2 systems). Missing cells (-1) drop out of both steps. Then EAP
abilities (posterior means and sds on the nodes) and each person's exact (up to the rule)
marginal log-likelihood. Written by hand because no maintained Python library offers MML for
IRT on numpy arrays; numpy float64 throughout.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from scipy.special import expit, log_expit, logsumexp


@dataclass
class MMLResult:
    discrimination: np.ndarray  # (J,)
    difficulty: np.ndarray  # (J,)
    loglik: float  # total marginal log-likelihood at the estimate
    iterations: int
    converged: bool
    reason: str
    wall_seconds: float


def nodes(n_nodes: int = 41):
    """Gauss-Hermite nodes and log-weights for an N(0, 1) ability."""
    x, w = np.polynomial.hermite_e.hermegauss(n_nodes)
    return x, np.log(w / w.sum())


def _check(y):
    y = np.asarray(y)
    if y.ndim != 2:
        raise ValueError(f"responses must be persons x items, got shape {y.shape}")
    bad = (y != -1) & (y != 0) & (y != 1)
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        raise ValueError(f"response {y[i, j]} of person {i} to item {j} is not 0, 1 or -1 (missing)")
    obs = y != -1
    if not obs.any(1).all():
        raise ValueError(f"person {int(np.flatnonzero(~obs.any(1))[0])} has no observed response")
    if not obs.any(0).all():
        raise ValueError(f"item {int(np.flatnonzero(~obs.any(0))[0])} has no observed response")
    return (y == 1).astype(np.float64), (y == 0).astype(np.float64)


def node_loglik(y1, y0, a, d, x):
    """(N, Q) log p(y_i | theta = x_q)."""
    eta = np.outer(a, x) - d[:, None]  # (J, Q)
    return y1 @ log_expit(eta) + y0 @ log_expit(-eta)


def fit(y, n_nodes: int = 41, max_iter: int = 500, tol: float = 1e-8, newton_steps: int = 3) -> MMLResult:
    """Bock-Aitkin EM to a relative change of the log-likelihood below ``tol``."""
    t0 = time.perf_counter()
    y1, y0 = _check(y)
    x, logw = nodes(n_nodes)
    n_obs = (y1 + y0).sum(0)
    p = np.clip(y1.sum(0) / n_obs, 0.01, 0.99)
    a, d = np.ones(y1.shape[1]), -np.log(p / (1 - p))
    prev, converged, reason = -np.inf, False, f"reached max_iter={max_iter}"
    it = 0
    for it in range(1, max_iter + 1):
        lj = node_loglik(y1, y0, a, d, x) + logw
        norm = logsumexp(lj, axis=1, keepdims=True)
        total = float(norm.sum())
        post = np.exp(lj - norm)  # (N, Q)
        r1, r0 = y1.T @ post, y0.T @ post  # (J, Q) expected correct / incorrect at each node
        for _ in range(newton_steps):
            eta = np.outer(a, x) - d[:, None]
            pr = expit(eta)
            resid = r1 - (r1 + r0) * pr  # d loglik / d eta per node
            info = (r1 + r0) * pr * (1 - pr)
            ga, gd = (resid * x).sum(1), -resid.sum(1)
            haa, had, hdd = (info * x * x).sum(1), -(info * x).sum(1), info.sum(1)
            det = haa * hdd - had ** 2 + 1e-12
            a = a + (hdd * ga - had * gd) / det
            d = d + (haa * gd - had * ga) / det
        if abs(total - prev) < tol * abs(total):
            converged, reason = True, f"relative change of the log-likelihood below {tol:g}"
            break
        prev = total
    final = float(logsumexp(node_loglik(y1, y0, a, d, x) + logw, axis=1).sum())
    return MMLResult(a, d, final, it, converged, reason, time.perf_counter() - t0)


def eap(y, a, d, n_nodes: int = 61):
    """EAP abilities: posterior mean and sd on the nodes, (N,) each."""
    y1, y0 = _check(y)
    x, logw = nodes(n_nodes)
    lj = node_loglik(y1, y0, np.asarray(a, float), np.asarray(d, float), x) + logw
    post = np.exp(lj - logsumexp(lj, axis=1, keepdims=True))
    mean = post @ x
    return mean, np.sqrt(np.maximum(post @ x ** 2 - mean ** 2, 0.0))


def marginal_loglik(y, a, d, n_nodes: int = 61):
    """Per-person log p(y_i | a, d) with theta ~ N(0, 1), (N,)."""
    y1, y0 = _check(y)
    x, logw = nodes(n_nodes)
    return logsumexp(node_loglik(y1, y0, np.asarray(a, float), np.asarray(d, float), x) + logw, axis=1)


def predictive_probs(y, a, d, rows, cols, n_nodes: int = 61):
    """P(y_ij = 1 | observed responses of i) at cells (rows, cols), averaged over the person's
    posterior on the nodes (item parameters plugged in)."""
    y1, y0 = _check(y)
    x, logw = nodes(n_nodes)
    a, d = np.asarray(a, float), np.asarray(d, float)
    lj = node_loglik(y1[rows], y0[rows], a, d, x) + logw
    post = np.exp(lj - logsumexp(lj, axis=1, keepdims=True))
    p1 = (post * expit(a[cols, None] * x[None, :] - d[cols, None])).sum(1)
    return np.stack([1 - p1, p1], axis=1)
