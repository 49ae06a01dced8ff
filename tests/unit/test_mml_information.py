"""Standard errors of marginal-ML item parameters (inference.marginal.mml_information): the observed
information against finite differences of the gradient, the delta method for thresholds against
draws, filler cuts, and (slow) the coverage of the intervals over simulated replications."""

import jax
import numpy as np
import pytest

from bayesirt.data.grm_sampling import sample_grm
from bayesirt.inference.marginal import mml
from bayesirt.inference.marginal import mml_information as mi


def simulated(seed: int, n_persons: int, n_categories, missing: float = 0.0):
    """A unidimensional GRM data set: responses, true discriminations and thresholds (tau, with
    P(Y >= k) = sigmoid(a (theta - tau_k)); mml's cuts are a * tau)."""
    rng = np.random.default_rng(seed)
    n_categories = np.asarray(n_categories)
    n_items, kmax = len(n_categories), int(n_categories.max())
    a = rng.lognormal(0.2, 0.3, n_items)
    tau = np.sort(rng.normal(0.0, 1.0, (n_items, kmax - 1)), axis=1)
    tau = np.where(np.arange(kmax - 1) < n_categories[:, None] - 1, tau, 50.0)  # filler: never reached
    theta = rng.normal(size=(n_persons, 1))
    y = sample_grm(rng, np.broadcast_to(theta, (n_persons, n_items)), tau, a[None, :]).astype(np.int32)
    y[rng.random(y.shape) < missing] = -1
    return y, a, tau


def test_the_information_matches_finite_differences_of_the_gradient():
    cats = [3, 4, 2, 4, 3]
    y, _, _ = simulated(0, 400, cats, missing=0.2)
    fit = mml.fit(None, y, mml.Structure(cats))
    info, mask = mi.observed_information(y, fit.discrimination, fit.cuts, mml.Structure(cats))
    nll, point, mask2 = mi.marginal_nll(y, fit.discrimination, fit.cuts, mml.Structure(cats))
    assert (mask == mask2).all() and info.shape == (mask.sum(), mask.sum()) == (5 + 11, 5 + 11)
    grad = jax.jit(jax.grad(nll))
    h = 1e-2
    for j in range(info.shape[0]):
        e = np.zeros(info.shape[0], np.float32)
        e[j] = h
        column = (np.asarray(grad(point + e), np.float64) - np.asarray(grad(point - e), np.float64)) / (2 * h)
        np.testing.assert_allclose(info[:, j], column, rtol=0.03, atol=0.03 * np.abs(info[j, j]))


def test_threshold_errors_follow_the_delta_method_and_filler_cuts_have_none():
    cats = [3, 4, 2, 4]
    y, _, _ = simulated(1, 600, cats)
    fit = mml.fit(None, y, mml.Structure(cats))
    se = mi.standard_errors(y, fit.discrimination, fit.cuts, mml.Structure(cats))
    assert np.isnan(se.cuts[2, 1:]).all() and np.isnan(se.cuts[0, 2]) and np.isfinite(se.cuts[1]).all()
    assert np.isnan(se.thresholds[2, 1:]).all() and (se.discrimination > 0).all()
    # draws of the free parameters from N(estimate, covariance / 100), where cut / a is close to
    # linear: 10 x the sd of cut / a per threshold is the first-order (delta-method) error
    mask = mi.free_mask(np.asarray(cats), 4)
    rng = np.random.default_rng(2)
    free = np.concatenate([fit.discrimination, fit.cuts.ravel()])[mask]
    draws = rng.multivariate_normal(free, se.covariance / 100, size=40_000)
    full = np.tile(np.concatenate([fit.discrimination, fit.cuts.ravel()]), (len(draws), 1))
    full[:, mask] = draws
    a, c = full[:, :4], full[:, 4:].reshape(-1, 4, 3)
    sd = 10 * (c / a[:, :, None]).std(0)
    used = np.isfinite(se.thresholds)
    np.testing.assert_allclose(se.thresholds[used], sd[used], rtol=0.03)


def test_a_point_that_is_no_maximum_is_refused():
    cats = [3, 3, 3]
    y, a, tau = simulated(3, 300, cats)
    with pytest.raises(ValueError, match="not positive definite"):
        # every discrimination at 20: the likelihood is far from its maximum and bends the wrong way
        mi.standard_errors(y, np.full(3, 20.0), 20.0 * tau, mml.Structure(cats))


@pytest.mark.slow
def test_intervals_cover_the_truth_at_their_level():
    # 40 data sets of 1,500 persons, 8 items with 5 categories, 10% of responses missing; the
    # 90% intervals (estimate +- 1.645 SE) of discriminations and thresholds, over the 320 items
    # (1,280 thresholds) x data sets, cover the truth in 0.85-0.95 of cases. Seeds 100-139.
    cats = [5] * 8
    hits_a, hits_tau = [], []
    for seed in range(100, 140):
        y, a, tau = simulated(seed, 1500, cats, missing=0.1)
        fit = mml.fit(None, y, mml.Structure(cats), mml.MMLSettings(max_iter=500, tol=1e-6))
        se = mi.standard_errors(y, fit.discrimination, fit.cuts, mml.Structure(cats))
        hits_a.append(np.abs(fit.discrimination - a) <= 1.645 * se.discrimination)
        hits_tau.append(np.abs(fit.thresholds - tau) <= 1.645 * se.thresholds)
    cover_a, cover_tau = np.mean(hits_a), np.mean(hits_tau)
    assert 0.85 <= cover_a <= 0.95, cover_a
    assert 0.85 <= cover_tau <= 0.95, cover_tau
