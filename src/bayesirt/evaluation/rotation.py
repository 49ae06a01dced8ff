"""Rotation and alignment of exploratory factor solutions (seed 003, section 3.4 and 4.1).

Exploratory loadings are identified only up to an invertible transformation of the factors.
Following the paper (after Urban and Bauer 2021):

1. ``geomin``: Geomin oblique rotation (Yates 1987), criterion
   sum_i (prod_p (lambda_ip^2 + delta))^(1/P), minimised over oblique rotations by the
   gradient projection algorithm (Jennrich 2002; the same iteration as GPArotation's
   ``GPFoblq``), from several random starts because Geomin has local minima. No maintained
   Python package in our environment provides it, so it is written here (numpy, float64).
2. ``reflect``: factors whose loadings sum to a negative value are reversed.
3. ``align``: the columns are permuted to minimise the squared error against a reference
   solution (Hungarian algorithm, ``scipy.optimize.linear_sum_assignment``); factor
   correlations are permuted and reflected alike.
4. ``tucker_congruence``: per factor and mean; solutions count as equivalent above 0.98.

Conventions: loadings (I, P); a rotation matrix T (P, P) with unit-length columns maps
orthogonal loadings A (factor correlation I) to rotated loadings A (T')^-1 with factor
correlation T'T.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def geomin_criterion(loadings, delta: float = 0.01):
    """Value and gradient (w.r.t. the loadings) of the Geomin criterion.

    Parameters
    ----------
    loadings : array (I, P)
        Loadings.
    delta : float
        Geomin's small constant added to the squared loadings.

    Returns
    -------
    tuple
        The criterion (float) and its gradient (I, P).
    """
    lam = np.asarray(loadings, np.float64)
    k = lam.shape[1]
    l2 = lam * lam + delta
    pro = np.exp(np.log(l2).sum(1) / k)
    return pro.sum(), (2.0 / k) * lam / l2 * pro[:, None]


def _gpf_oblique(a, t, delta, max_iter, tol):
    """Gradient projection for oblique rotation from start ``t``; returns (loadings, T, f, converged)."""

    def rotated(tt):
        return a @ np.linalg.inv(tt).T

    lam = rotated(t)
    f, gq = geomin_criterion(lam, delta)
    g = -(lam.T @ gq @ np.linalg.inv(t)).T
    step = 1.0
    converged = False
    for _ in range(max_iter):
        gp = g - t @ np.diag(np.sum(t * g, axis=0))
        s = np.linalg.norm(gp)
        if s < tol:
            converged = True
            break
        step *= 2.0
        for _ in range(20):
            x = t - step * gp
            tt = x / np.sqrt(np.sum(x * x, axis=0))
            lam_t = rotated(tt)
            ft, gq_t = geomin_criterion(lam_t, delta)
            if ft < f - 0.5 * s * s * step:
                break
            step /= 2.0
        t, lam, f, gq = tt, lam_t, ft, gq_t
        g = -(lam.T @ gq @ np.linalg.inv(t)).T
    return lam, t, f, converged


@dataclass
class Rotation:
    """The result of ``geomin``.

    Attributes
    ----------
    loadings : numpy.ndarray (I, P)
        Rotated loadings.
    factor_corr : numpy.ndarray (P, P)
        Factor correlations after rotation.
    rotation : numpy.ndarray (P, P)
        The rotation matrix T.
    criterion : float
        Geomin criterion at the solution.
    converged : bool
        Whether the best start converged.
    """

    loadings: np.ndarray  # (I, P) rotated
    factor_corr: np.ndarray  # (P, P)
    rotation: np.ndarray  # T
    criterion: float
    converged: bool


def geomin(
    loadings,
    factor_corr=None,
    delta: float = 0.01,
    n_starts: int = 10,
    seed: int = 0,
    max_iter: int = 1000,
    tol: float = 1e-6,
) -> Rotation:
    """Geomin oblique rotation of ``loadings`` whose factors have correlation ``factor_corr``.

    The first start is the identity, then random orthogonal matrices; the solution with the
    smallest criterion is returned.

    Parameters
    ----------
    loadings : array (I, P)
        Loadings.
    factor_corr : array (P, P), optional
        Factor correlations (identity if None).
    delta : float
        Geomin's constant.
    n_starts : int
        Starts (the identity, then random orthogonal matrices).
    seed : int
        Seed of the random starts.
    max_iter : int
        Most iterations per start.
    tol : float
        Convergence tolerance.

    Returns
    -------
    Rotation
        The best solution.
    """
    lam = np.asarray(loadings, np.float64)
    p = lam.shape[1]
    a = lam if factor_corr is None else lam @ np.linalg.cholesky(np.asarray(factor_corr, np.float64))
    if p == 1:
        return Rotation(a.copy(), np.ones((1, 1)), np.ones((1, 1)), geomin_criterion(a, delta)[0], True)
    rng = np.random.default_rng(seed)
    best = None
    for start in range(n_starts):
        t0 = np.eye(p) if start == 0 else np.linalg.qr(rng.normal(size=(p, p)))[0]
        lam_r, t, f, conv = _gpf_oblique(a, t0, delta, max_iter, tol)
        if best is None or f < best.criterion - 1e-10:
            best = Rotation(lam_r, t.T @ t, t, f, conv)
    return best


def reflect(loadings, factor_corr=None):
    """Reverse factors whose loadings sum negative.

    Parameters
    ----------
    loadings : array (I, P)
        Loadings.
    factor_corr : array (P, P), optional
        Factor correlations (identity if None).

    Returns
    -------
    tuple of numpy.ndarray
        (loadings, corr, signs).
    """
    lam = np.asarray(loadings, np.float64)
    signs = np.where(lam.sum(0) < 0, -1.0, 1.0)
    corr = np.eye(lam.shape[1]) if factor_corr is None else np.asarray(factor_corr, np.float64)
    return lam * signs, corr * np.outer(signs, signs), signs


def align(loadings, reference, factor_corr=None):
    """Reflect (loadings sum positive), then permute columns to best match ``reference`` in squared error.

    Parameters
    ----------
    loadings : array (I, P)
        Loadings.
    reference : array (I, P)
        Reference loadings.
    factor_corr : array (P, P), optional
        Factor correlations.

    Returns
    -------
    tuple
        (loadings, corr, permutation, signs) with
        ``aligned[:, k] = signs[k] * loadings[:, permutation[k]]``.

    Raises
    ------
    ValueError
        If the shapes of ``loadings`` and ``reference`` differ.
    """
    lam, corr, signs = reflect(loadings, factor_corr)
    ref = np.asarray(reference, np.float64)
    if ref.shape != lam.shape:
        raise ValueError(f"loadings {lam.shape} and reference {ref.shape} differ in shape")
    cost = ((lam[:, :, None] - ref[:, None, :]) ** 2).sum(0)  # (own column, reference column)
    from scipy.optimize import linear_sum_assignment  # here: scipy.optimize is slow to import

    own, target = linear_sum_assignment(cost)
    perm = np.empty(lam.shape[1], int)
    perm[target] = own
    return lam[:, perm], corr[np.ix_(perm, perm)], perm, signs[perm]


def tucker_congruence(a, b):
    """Tucker's congruence coefficient per column: sum(a b) / sqrt(sum a^2 sum b^2).

    Parameters
    ----------
    a, b : array (I, P)
        Loadings.

    Returns
    -------
    numpy.ndarray
        Congruences, shape (P,).
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return (a * b).sum(0) / np.sqrt((a * a).sum(0) * (b * b).sum(0))


def rotate_and_align(loadings, reference, factor_corr=None, equivalent_above: float = 0.98, **kwargs) -> dict:
    """Geomin-rotate, reflect and align a solution to a reference (already rotated) one.

    Parameters
    ----------
    loadings : array (I, P)
        Loadings.
    reference : array (I, P)
        Reference loadings, already rotated.
    factor_corr : array (P, P), optional
        Factor correlations.
    equivalent_above : float
        Smallest congruence for which the solutions count as equivalent.
    **kwargs
        Passed to ``geomin``.

    Returns
    -------
    dict
        ``loadings``, ``factor_corr``, ``permutation``, ``signs``, ``congruence`` (P,),
        ``mean_congruence``, ``equivalent``, ``criterion``, ``converged``.
    """
    rot = geomin(loadings, factor_corr, **kwargs)
    lam, corr, perm, signs = align(rot.loadings, reference, rot.factor_corr)
    phi = tucker_congruence(lam, reference)
    return {
        "loadings": lam,
        "factor_corr": corr,
        "permutation": perm,
        "signs": signs,
        "congruence": phi,
        "mean_congruence": float(phi.mean()),
        "equivalent": bool(phi.min() > equivalent_above),
        "criterion": rot.criterion,
        "converged": rot.converged,
    }
