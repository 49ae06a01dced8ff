"""Careless-responder screening (Urban & Bauer, 2021), as the IPIP-FFM preprocessing uses it.

Four risk flags, each 0 (none), 1 (low) or 2 (high risk):
    test time       testelapse < 150 s -> 2; > 3600 s -> 1 (NaN: no flag)
    long string     a run of >= 10 identical consecutive answers (file order of the items, raw
                    codes): of 1 or 5 -> 2; of 2 or 4 -> 1
    Mahalanobis     p-value of the squared distance (chi-square, df = observed items)
                    p < .05 -> 2; .05 < p < .10 -> 1. Mean and covariance from the complete
                    rows; persons with missing items use the observed sub-vector.
    Guttman errors  polytomous Guttman errors G_p summed over the factors, on the re-oriented
                    responses (item steps X >= 1..K-1 ordered by popularity within each
                    factor; missing steps count as 0). Cut-offs: medians over bootstrap
                    resamples of the 95% and 90% quantiles of G_p in data simulated from a
                    unidimensional GRM per factor: G_p > cut95 -> 2; > cut90 -> 1.
A person is dropped when the flags sum to 4 or more, or when three or more flags are raised
(two high; one high and two low; three low; ...).

The GRM behind the Guttman cut-offs. As Urban & Bauer (R ``ltm``): one unidimensional GRM per
factor fitted by marginal maximum likelihood (abilities N(0, 1) integrated out by quadrature)
to a random subsample of ``guttman_fit_persons`` persons, EAP abilities, and
``guttman_simulated_persons`` simulated persons, each factor's ability resampled independently
from the EAPs and responses drawn by ``grm_sampling.sample_grm``; ``info`` records the sizes, the
fit and the cut-offs. The data layer does not import ``inference``, so the fitter is passed in
(``fit_grm``; the workflow passes ``bayesirt.inference.marginal.mml.fit_arrays``). It is called as

    fit_grm(y, n_categories, factor, max_iter=...)

with ``y`` (N, I) categories 0..K-1 (missing -1), ``n_categories`` (I,), ``factor`` (I,) in
0..F-1, and returns an object with ``discrimination`` (I,), ``cuts`` (I, K-1) such that
P(Y >= k | theta) = sigmoid(discrimination * theta - cuts_k), ``ability`` (N, F) EAP abilities,
``mean_nll`` (the marginal negative log-likelihood per person), ``iterations``, ``grad_norm``,
``converged`` and ``reason``.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd

from bayesirt.data.grm_sampling import sample_grm
from bayesirt.io import MISSING

log = logging.getLogger("bayesirt")

FLAGS = ("test_time", "long_string", "mahalanobis", "guttman")


def careless_flags(
    codes: np.ndarray,
    oriented: np.ndarray,
    testelapse: np.ndarray,
    factor: np.ndarray,
    n_categories: int,
    opt,
    fit_grm=None,
) -> tuple[np.ndarray, dict]:
    """(N, 4) risk levels 0/1/2 in the order of ``FLAGS`` (0 where a flag is switched off).

    Parameters
    ----------
    codes : numpy.ndarray (N, I)
        Raw codes 1..K, missing -1, items in file order.
    oriented : numpy.ndarray (N, I)
        The same as categories 0..K-1 with reverse-keyed items reversed.
    testelapse : numpy.ndarray (N,)
        Test times in seconds (NaN: unknown).
    factor : numpy.ndarray (I,)
        Each item's factor (0..F-1).
    n_categories : int
        K.
    opt : ipip.Preprocess
        The switches and sizes of ``bayesirt.data.ipip.Preprocess``.
    fit_grm : callable, optional
        The GRM fitter of the Guttman cut-offs, needed when ``opt.flag_guttman`` is on.

    Returns
    -------
    tuple of (numpy.ndarray, dict)
        The flags (N, 4), int8, and ``info`` (sizes, the fit and the cut-offs).

    Raises
    ------
    ValueError
        If the Guttman flag is on and no ``fit_grm`` is given.
    """
    require_fitter(opt, fit_grm)
    n = codes.shape[0]
    flags = np.zeros((n, len(FLAGS)), dtype=np.int8)
    info: dict = {"enabled": True}
    if opt.flag_test_time:
        flags[:, 0] = test_time_flag(testelapse, opt.test_time_min, opt.test_time_max)
    if opt.flag_long_string:
        flags[:, 1] = long_string_flag(codes, opt.long_string_length)
    if opt.flag_mahalanobis:
        p = mahalanobis_pvalues(np.where(codes == MISSING, np.nan, codes.astype(np.float64)))
        flags[:, 2] = np.where(
            p < opt.mahalanobis_p_high, 2, np.where((p > opt.mahalanobis_p_high) & (p < opt.mahalanobis_p_low), 1, 0)
        )
    if opt.flag_guttman:
        gp = guttman_errors(oriented, n_categories, factor)
        cut_high, cut_low, g_info = guttman_cutoffs(oriented, factor, n_categories, opt, fit_grm)
        flags[:, 3] = np.where(gp > cut_high, 2, np.where(gp > cut_low, 1, 0))
        info["guttman"] = g_info
    for k, name in enumerate(FLAGS):
        info[name] = {
            **info.get(name, {}),
            "switched_on": bool(getattr(opt, f"flag_{name}")),
            "low": int((flags[:, k] == 1).sum()),
            "high": int((flags[:, k] == 2).sum()),
        }
    info["dropped"] = int(drop_rule(flags).sum())
    return flags, info


def require_fitter(opt, fit_grm) -> None:
    """Stop early, with what to do, when the Guttman flag is on and no GRM fitter was given.

    Parameters
    ----------
    opt : ipip.Preprocess
        The switches and sizes of ``bayesirt.data.ipip.Preprocess``.
    fit_grm : callable or None
        The GRM fitter.

    Raises
    ------
    ValueError
        If the careless screen and its Guttman flag are on and ``fit_grm`` is None.
    """
    if getattr(opt, "screen_careless", True) and opt.flag_guttman and fit_grm is None:
        raise ValueError(
            "the Guttman flag of the careless-responder screen needs a GRM fitter: pass "
            "fit_grm=bayesirt.inference.marginal.mml.fit_arrays (or set flag_guttman: false)"
        )


def drop_rule(flags: np.ndarray) -> np.ndarray:
    """Urban & Bauer's combination: risk levels sum to >= 4, or >= 3 flags raised.

    Parameters
    ----------
    flags : numpy.ndarray (N, 4)
        Risk levels 0/1/2.

    Returns
    -------
    numpy.ndarray
        Persons to drop, (N,) bool.
    """
    return (flags.sum(1) >= 4) | ((flags > 0).sum(1) >= 3)


def test_time_flag(testelapse, t_min=150.0, t_max=3600.0) -> np.ndarray:
    """Test-time risk: 2 below ``t_min`` seconds, 1 above ``t_max``, else 0 (NaN: no flag).

    Parameters
    ----------
    testelapse : array (N,)
        Test times in seconds.
    t_min, t_max : float
        The bounds.

    Returns
    -------
    numpy.ndarray
        Risk levels (N,), int8.
    """
    t = np.asarray(testelapse, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(t < t_min, 2, np.where(t > t_max, 1, 0)).astype(np.int8)  # NaN -> 0


def long_string_flag(codes: np.ndarray, length: int = 10) -> np.ndarray:
    """2 for a run of >= ``length`` identical answers 1 or 5, 1 for 2 or 4 (missing breaks runs).

    Parameters
    ----------
    codes : numpy.ndarray (N, I)
        Raw codes 1..5, missing -1, items in file order.
    length : int
        Shortest run that counts.

    Returns
    -------
    numpy.ndarray
        Risk levels (N,), int8.
    """
    n, m = codes.shape
    run = np.ones(n, dtype=np.int16)
    high = np.zeros(n, dtype=bool)
    low = np.zeros(n, dtype=bool)
    prev = codes[:, 0]
    for j in range(m):
        cur = codes[:, j]
        if j > 0:
            run = np.where((cur == prev) & (cur != MISSING), run + 1, 1).astype(np.int16)
        long = run >= length
        high |= long & ((cur == 1) | (cur == 5))
        low |= long & ((cur == 2) | (cur == 4))
        prev = cur
    return np.where(high, 2, np.where(low, 1, 0)).astype(np.int8)


def mahalanobis_pvalues(x: np.ndarray, chunk: int = 200_000) -> np.ndarray:
    """Chi-square p-values of squared Mahalanobis distances; NaN = missing (df = observed items).

    Mean and covariance from the complete rows; persons with missing items use the observed
    sub-vector.

    Parameters
    ----------
    x : numpy.ndarray (N, I)
        Responses as floats, NaN for missing.
    chunk : int
        Persons per block.

    Returns
    -------
    numpy.ndarray
        p-values, shape (N,).
    """
    from scipy import linalg, stats

    obs = ~np.isnan(x)
    complete = obs.all(1)
    n_items = x.shape[1]
    if complete.sum() > 2 * n_items:
        mu = x[complete].mean(0)
        cov = np.cov(x[complete], rowvar=False)
    else:  # too few complete rows: pairwise-complete estimates
        mu = np.nanmean(x, 0)
        cov = pd.DataFrame(x).cov().to_numpy()
    cov = _positive_definite(cov)
    chol = linalg.cholesky(cov, lower=True)
    d2 = np.full(x.shape[0], np.nan)
    rows = np.flatnonzero(complete)
    for start in range(0, rows.size, chunk):
        r = rows[start : start + chunk]
        z = linalg.solve_triangular(chol, (x[r] - mu).T, lower=True)
        d2[r] = np.einsum("ij,ij->j", z, z)
    partial = np.flatnonzero(~complete & obs.any(1))
    if partial.size:
        patterns, inverse = np.unique(np.packbits(obs[partial], axis=1), axis=0, return_inverse=True)
        inverse = inverse.ravel()
        for k in range(patterns.shape[0]):
            r = partial[inverse == k]
            o = obs[r[0]]
            sub = linalg.cholesky(cov[np.ix_(o, o)], lower=True)
            z = linalg.solve_triangular(sub, (x[np.ix_(r, o)] - mu[o]).T, lower=True)
            d2[r] = np.einsum("ij,ij->j", z, z)
    return stats.chi2.sf(d2, df=obs.sum(1))


def _positive_definite(cov: np.ndarray) -> np.ndarray:
    """Add a ridge when the covariance is (numerically) singular or, estimated from pairwise-complete
    rows, indefinite (e.g. tiny samples)."""
    w = np.linalg.eigvalsh(cov)
    if w[0] > 1e-8 * max(w[-1], 1e-12):
        return cov
    # a pairwise-complete covariance can be indefinite: lift its lowest eigenvalue above zero
    ridge = max(-w[0], 0.0) + 1e-3 * max(np.trace(cov) / cov.shape[0], 1e-6)
    log.warning("Mahalanobis: covariance is singular; adding a ridge of %.3g", ridge)
    return cov + ridge * np.eye(cov.shape[0])


def guttman_errors(y: np.ndarray, n_categories: int, factor=None) -> np.ndarray:
    """Polytomous Guttman errors summed over the factors.

    Within a factor the item steps X >= 1..K-1 are ordered by popularity (proportion passing,
    missing = not passing), most popular first; a person's count is the number of (passed,
    failed) pairs where the failed step is the more popular one: sum_k x_k * (number of failed
    steps before k).

    Parameters
    ----------
    y : numpy.ndarray (N, I)
        Oriented categories 0..K-1, missing -1.
    n_categories : int
        K.
    factor : array (I,), optional
        Each item's factor (None: all items one factor).

    Returns
    -------
    numpy.ndarray
        Guttman errors per person, (N,) int32.
    """
    n = y.shape[0]
    total = np.zeros(n, dtype=np.int32)
    factor = np.zeros(y.shape[1], int) if factor is None else np.asarray(factor)
    for f in np.unique(factor):
        block = y[:, factor == f]
        steps = (block[:, :, None] >= np.arange(1, n_categories)[None, None, :]).reshape(n, -1)
        popularity = steps.mean(0)
        # R's rev(order(p)): descending popularity, ties in reverse column order
        order = np.argsort(popularity, kind="stable")[::-1]
        x = steps[:, order]
        failed_before = np.cumsum(~x, axis=1, dtype=np.int16)
        total += (x * failed_before).sum(1, dtype=np.int32)
    return total


def guttman_cutoffs(y: np.ndarray, factor: np.ndarray, n_categories: int, opt, fit_grm) -> tuple[float, float, dict]:
    """Bootstrap cut-offs of the Guttman statistic under GRMs fitted to ``y`` (oriented) by ``fit_grm``.

    See the module notes.

    Parameters
    ----------
    y : numpy.ndarray (N, I)
        Oriented categories 0..K-1, missing -1.
    factor : numpy.ndarray (I,)
        Each item's factor.
    n_categories : int
        K.
    opt : ipip.Preprocess
        The switches and sizes of ``bayesirt.data.ipip.Preprocess``.
    fit_grm : callable
        The GRM fitter of the Guttman cut-offs (see the module notes).

    Returns
    -------
    tuple of (float, float, dict)
        The high and low cut-offs (bootstrap medians of the ``guttman_quantile_high`` and
        ``guttman_quantile_low`` quantiles) and ``info`` (sizes, the fit).
    """
    t0 = time.perf_counter()
    rng = np.random.default_rng(np.random.SeedSequence([int(opt.seed), 7]))
    n, n_items = y.shape
    fit_rows = rng.choice(n, size=min(n, opt.guttman_fit_persons), replace=False)
    fit_rows.sort()
    fit = fit_grm(y[fit_rows], np.full(n_items, n_categories), factor, max_iter=opt.guttman_fit_iterations)
    if not fit.converged:
        log.warning("Guttman cut-offs: the GRM fit did not converge (%s)", fit.reason)
    n_sim = opt.guttman_simulated_persons
    theta = np.asarray(fit.ability)
    a = np.asarray(fit.discrimination, np.float64)
    theta_sim = np.stack([rng.choice(theta[:, f], size=n_sim, replace=True) for f in range(theta.shape[1])], axis=1)
    y_sim = sample_grm(rng, theta_sim[:, factor] * a[None, :], np.asarray(fit.cuts, np.float64))
    g_sim = guttman_errors(y_sim, n_categories, factor).astype(np.float64)
    q_high, q_low = [], []
    for _ in range(opt.guttman_bootstrap):
        b = g_sim[rng.integers(0, n_sim, size=n_sim)]
        hi, lo = np.quantile(b, [opt.guttman_quantile_high, opt.guttman_quantile_low])
        q_high.append(hi)
        q_low.append(lo)
    cut_high, cut_low = float(np.median(q_high)), float(np.median(q_low))
    fitter = f"{getattr(fit_grm, '__module__', '?')}.{getattr(fit_grm, '__qualname__', repr(fit_grm))}"
    info = {
        "cutoff_high": cut_high,
        "cutoff_low": cut_low,
        "fit_persons": int(fit_rows.size),
        "fit": f"marginal ML of one unidimensional GRM per factor, EAP abilities ({fitter})",
        "fit_max_iterations": int(opt.guttman_fit_iterations),
        "fit_iterations": int(fit.iterations),
        "fit_converged": bool(fit.converged),
        "fit_grad_norm": float(fit.grad_norm),
        "fit_reason": str(fit.reason),
        "fit_mean_nll": float(fit.mean_nll),
        "simulated_persons": n_sim,
        "bootstrap": opt.guttman_bootstrap,
        "discrimination_mean": float(a.mean()),
        "seconds": time.perf_counter() - t0,
    }
    return cut_high, cut_low, info
