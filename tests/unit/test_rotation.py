"""Geomin rotation, reflection, alignment and congruence (evaluation/rotation.py)."""

import numpy as np
import pytest

from bayesirt.evaluation import rotation


def oblique_simple_structure(seed=3, n_items=15, n_factors=3):
    rng = np.random.default_rng(seed)
    lam = np.zeros((n_items, n_factors))
    lam[np.arange(n_items), np.arange(n_items) % n_factors] = rng.uniform(0.8, 1.6, n_items)
    lam[0, 1] = 0.4  # one cross-loading
    phi = np.array([[1, 0.3, 0.2], [0.3, 1, -0.1], [0.2, -0.1, 1]])
    return lam, phi


def test_geomin_recovers_rotated_permuted_reflected_loadings():
    lam, phi = oblique_simple_structure()
    rng = np.random.default_rng(7)
    q = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    # an orthogonal (factor correlation I) solution, rotated, permuted and with a sign flip
    scrambled = (lam @ np.linalg.cholesky(phi) @ q)[:, [2, 0, 1]] * np.array([1, -1, 1])
    out = rotation.rotate_and_align(scrambled, lam)
    # delta = 0.01 leaves small non-zero loadings; tolerance 0.01
    np.testing.assert_allclose(out["loadings"], lam, atol=0.01)
    np.testing.assert_allclose(out["factor_corr"], phi, atol=0.01)
    assert out["equivalent"] and out["mean_congruence"] > 0.999 and out["converged"]


def test_geomin_from_a_correlated_solution():
    lam, phi = oblique_simple_structure(seed=5)
    rot = rotation.geomin(lam, factor_corr=phi)  # already simple: rotation must keep it
    aligned, corr, perm, signs = rotation.align(rot.loadings, lam, rot.factor_corr)
    # Geomin's minimum with delta = 0.01 is near, not at, the exact simple structure
    # (here within 0.02); tolerance 0.03
    np.testing.assert_allclose(aligned, lam, atol=0.03)
    np.testing.assert_allclose(corr, phi, atol=0.03)


def test_geomin_criterion_gradient_matches_finite_differences():
    lam = np.random.default_rng(0).normal(size=(6, 3))
    f, g = rotation.geomin_criterion(lam)
    h = 1e-6
    num = np.zeros_like(lam)
    for idx in np.ndindex(lam.shape):
        up, dn = lam.copy(), lam.copy()
        up[idx] += h
        dn[idx] -= h
        num[idx] = (rotation.geomin_criterion(up)[0] - rotation.geomin_criterion(dn)[0]) / (2 * h)
    np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-8)


def test_reflect_and_align_move_correlations_alike():
    lam, phi = oblique_simple_structure()
    perm = np.array([1, 2, 0])
    signs = np.array([-1.0, 1.0, -1.0])
    moved = lam[:, perm] * signs
    moved_phi = phi[np.ix_(perm, perm)] * np.outer(signs, signs)
    aligned, corr, p, s = rotation.align(moved, lam, moved_phi)
    np.testing.assert_allclose(aligned, lam)
    np.testing.assert_allclose(corr, phi)
    np.testing.assert_allclose(moved[:, p] * s, lam)


def test_tucker_congruence():
    a = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])
    np.testing.assert_allclose(rotation.tucker_congruence(a, 2 * a), [1.0, 1.0])
    np.testing.assert_allclose(rotation.tucker_congruence(a, -a), [-1.0, -1.0])
    b = np.array([[0.0, 1.0], [0.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(rotation.tucker_congruence(a[:, :1], b[:, :1]), [0.0])
    with pytest.raises(ValueError, match="shape"):
        rotation.align(a, a[:, :1])
