"""Laplace draws of the factorized GRM's item parameters (inference.marginal.grm_laplace): with priors
too wide to matter they spread as marginal ML's standard errors (the same curvature, another
parameterisation), and estimates far from a mode are refused."""

import numpy as np
import pytest

from bayesirt.inference.marginal import grm_laplace, laplace, mml, mml_information
from bayesirt.models import factorized_grm as fgrm

from .test_mml_information import simulated

WIDE = fgrm.Priors(discrimination_scale=1e3, base_difficulty_scale=1e3, increment_scale=1e3)


def test_with_wide_priors_the_draws_spread_as_marginal_ml_standard_errors():
    cats = [4, 3, 4, 2, 4]
    y, _, _ = simulated(4, 3000, cats, missing=0.1)
    fit = mml.fit(None, y, mml.Structure(cats), mml.MMLSettings(max_iter=500, tol=1e-6))
    se = mml_information.standard_errors(y, fit.discrimination, fit.cuts, mml.Structure(cats))
    tau = fit.thresholds
    inc = np.where(np.arange(2)[None, :] < np.asarray(cats)[:, None] - 2, np.diff(tau, axis=1), 0.5)
    means = {"discrimination": fit.discrimination, "base_difficulty": tau[:, 0], "increments": inc}
    post = grm_laplace.item_posterior(y, fgrm.structure(cats), means, WIDE, n_draws=8000, seed=1)
    # the same curvature in another parameterisation: sds agree to Monte Carlo error (1.6%) and
    # the curvature of the softplus away from the estimate
    np.testing.assert_allclose(post.discrimination.std(0), se.discrimination, rtol=0.06)
    np.testing.assert_allclose(post.base_difficulty.std(0), se.thresholds[:, 0], rtol=0.06)
    np.testing.assert_allclose(post.discrimination.mean(0), fit.discrimination, rtol=0.02)
    assert (post.discrimination > 0).all() and (post.increments > 0).all()
    assert (post.increments[:, 3] == 0.5).all() and (post.increments[:, 1, 1] == 0.5).all()


def test_estimates_far_from_a_mode_are_refused_when_not_refined():
    cats = [3, 3, 3]
    y, _, tau = simulated(5, 300, cats)
    means = {"discrimination": np.full(3, 20.0), "base_difficulty": tau[:, 0], "increments": np.diff(tau, axis=1)}
    with pytest.raises(ValueError, match="not positive definite at the estimates"):
        grm_laplace.item_posterior(y, fgrm.structure(cats), means, WIDE, refine=False)


def test_newton_from_far_estimates_reaches_the_marginal_ml_estimate():
    # with priors too wide to matter, the mode of the unconstrained parameters' marginal
    # posterior is marginal ML's estimate (inference.marginal.mml, an independent optimiser) up to the
    # softplus Jacobian's pull, a small fraction of a standard error: from discriminations 4x
    # too large and thresholds shifted (tens of standard errors away), Newton's method gets
    # within 0.25 standard errors of it
    cats = [4, 3, 4, 2, 4]
    y, _, _ = simulated(4, 3000, cats, missing=0.1)
    fit = mml.fit(None, y, mml.Structure(cats), mml.MMLSettings(max_iter=500, tol=1e-7))
    tau = fit.thresholds
    inc = np.where(np.arange(2)[None, :] < np.asarray(cats)[:, None] - 2, np.diff(tau, axis=1), 0.5)
    far = {"discrimination": 4 * fit.discrimination, "base_difficulty": tau[:, 0] + 0.5, "increments": inc * 1.5}
    post = grm_laplace.item_posterior(y, fgrm.structure(cats), far, WIDE, n_draws=10, seed=1)
    assert post.converged and 1 <= post.newton_steps < laplace.NEWTON_STEPS
    se = mml_information.standard_errors(y, fit.discrimination, fit.cuts, mml.Structure(cats))
    assert np.all(np.abs(far["discrimination"] - fit.discrimination) > 10 * se.discrimination)
    assert np.all(np.abs(post.centre["discrimination"] - fit.discrimination) < 0.25 * se.discrimination)
    assert np.all(np.abs(post.centre["base_difficulty"] - tau[:, 0]) < 0.25 * se.thresholds[:, 0])


def test_data_sets_of_one_shape_share_one_compiled_objective():
    # replications of a study differ in their responses, not in their structure: Newton's
    # compiled gradient and Hessian of the first data set serve the second (no new entry)
    cats = [3, 3, 3]
    sizes = []
    for seed in (5, 6):
        y, _, tau = simulated(seed, 300, cats)
        means = {"discrimination": np.ones(3), "base_difficulty": tau[:, 0], "increments": np.diff(tau, axis=1)}
        post = grm_laplace.item_posterior(y, fgrm.structure(cats), means, WIDE, n_draws=10, seed=1)
        assert post.converged
        sizes.append(laplace._programs.cache_info())
    assert sizes[1].misses == sizes[0].misses and sizes[1].hits > sizes[0].hits
