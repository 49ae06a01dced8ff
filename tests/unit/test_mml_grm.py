"""Marginal ML of unidimensional GRMs by quadrature (bayesirt.inference.marginal.mml)."""

import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit

from bayesirt.data.grm_sampling import sample_grm
from bayesirt.data.simulate_binary import simulate_binary
from bayesirt.inference.marginal import mml, mml_posterior, mml_quadrature


def _tiny_problem():
    """5 persons, 5 items with 2, 3, 4, 2 and 4 categories on 2 factors, some cells missing."""
    n_categories = np.array([2, 3, 4, 2, 4])
    factor = np.array([0, 0, 0, 1, 1])
    a = np.array([0.8, 1.5, 1.1, 2.0, 0.6])
    # cuts beyond an item's K - 1 are filler (unused)
    cuts = np.array([[0.3, 9.0, 9.0], [-1.0, 0.5, 9.0], [-0.7, 0.2, 1.4], [-0.2, 9.0, 9.0], [-1.5, -0.4, 0.9]])
    y = np.array(
        [
            [1, 2, 3, 0, 1],
            [0, -1, 0, 1, 3],
            [-1, 1, 2, -1, -1],  # one observed item on factor 0, none on factor 1
            [1, 0, -1, 1, 0],
            [-1, -1, -1, -1, -1],
        ]
    )  # nothing observed
    return y, n_categories, factor, a, cuts


def _dense_grid_posterior(y, n_categories, factor, a, cuts):
    """Brute force in numpy: P(Y = k | theta) as differences of cumulative probabilities on a
    dense grid of abilities, integrated against the N(0, 1) density by the trapezoid rule."""
    theta = np.linspace(-10, 10, 20001)
    prior = np.exp(-0.5 * theta**2) / np.sqrt(2 * np.pi)
    n_factors = factor.max() + 1
    loglik = np.zeros(y.shape[0])
    eap = np.zeros((y.shape[0], n_factors))
    sd = np.zeros((y.shape[0], n_factors))
    for i in range(y.shape[0]):
        for f in range(n_factors):
            lik = np.ones_like(theta)
            for j in np.flatnonzero(factor == f):
                if y[i, j] < 0:
                    continue
                k, top = y[i, j], n_categories[j] - 1
                upper = 1.0 if k == 0 else expit(a[j] * theta - cuts[j, k - 1])
                lower = 0.0 if k == top else expit(a[j] * theta - cuts[j, k])
                lik = lik * (upper - lower)
            mass = np.trapezoid(lik * prior, theta)
            loglik[i] += np.log(mass)
            eap[i, f] = np.trapezoid(theta * lik * prior, theta) / mass
            sd[i, f] = np.sqrt(np.trapezoid((theta - eap[i, f]) ** 2 * lik * prior, theta) / mass)
    return loglik, eap, sd


def test_marginal_loglik_eap_and_sd_match_a_dense_grid():
    y, n_categories, factor, a, cuts = _tiny_problem()
    with jax.enable_x64(True):
        loglik, eap, sd = mml_posterior.posterior(y, a, cuts, n_categories, factor, n_nodes=61)
    ref_loglik, ref_eap, ref_sd = _dense_grid_posterior(y, n_categories, factor, a, cuts)
    np.testing.assert_allclose(loglik, ref_loglik, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(eap, ref_eap, atol=1e-8)
    np.testing.assert_allclose(sd, ref_sd, atol=1e-8)
    # missing cells contribute nothing: the person without responses gets the prior (log of the
    # quadrature weights' sum, 1 up to float64 rounding)
    assert abs(loglik[4]) < 1e-12 and np.allclose(eap[4], 0.0) and np.allclose(sd[4], 1.0)
    assert np.isclose(eap[2, 1], 0.0) and np.isclose(sd[2, 1], 1.0)
    # the default 21 nodes (float32) are close to the dense grid on these scales
    loglik21 = mml_posterior.marginal_loglik(y, a, cuts, n_categories, factor)
    np.testing.assert_allclose(loglik21, ref_loglik, rtol=1e-4, atol=1e-5)


def test_missing_cells_equal_dropped_items():
    y, n_categories, factor, a, cuts = _tiny_problem()
    keep = [0, 1, 2, 4]  # item 3 (factor 1) dropped here, set missing there
    y_missing = y.copy()
    y_missing[:, 3] = -1
    with jax.enable_x64(True):
        full = mml_posterior.marginal_loglik(y_missing, a, cuts, n_categories, factor)
        dropped = mml_posterior.marginal_loglik(y[:, keep], a[keep], cuts[keep], n_categories[keep], factor[keep])
    np.testing.assert_allclose(full, dropped, rtol=1e-12)


def test_gradient_matches_central_differences():
    y, n_categories, factor, a, cuts = _tiny_problem()
    with jax.enable_x64(True):
        # the filler cuts of short items made increasing, so that they have an unconstrained form
        cuts = np.where(
            np.arange(3) < (n_categories - 1)[:, None],
            cuts,
            cuts[np.arange(5), n_categories - 2][:, None] + 0.5 * np.arange(1, 4),
        )
        params = mml_quadrature.unconstrain(jnp.asarray(a), jnp.asarray(cuts))
        flat, unravel = jax.flatten_util.ravel_pytree(params)
        objective = jax.jit(
            lambda v: mml_posterior.mean_nll(mml_quadrature.Params(*unravel(v)), y, n_categories, factor)
        )
        grad = np.asarray(jax.grad(objective)(flat))
        h = 1e-6
        fd = np.array([(objective(flat + h * e) - objective(flat - h * e)) / (2 * h) for e in np.eye(flat.size)])
    assert np.abs(grad).max() > 0.05
    np.testing.assert_allclose(grad, fd, atol=1e-7)
    # increments of cuts an item does not have do not move the objective
    g_inc = np.asarray(unravel(jnp.asarray(grad)).inc_raw)  # (5, 2)
    unused = np.arange(2)[None, :] >= (n_categories - 2)[:, None]
    assert np.all(g_inc[unused] == 0.0) and np.all(g_inc[~unused] != 0.0)


def _simulate(seed, n_persons, a, thresholds, factor, missing=0.0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_persons, factor.max() + 1))
    y = sample_grm(rng, theta[:, factor], thresholds, a).astype(np.int64)
    y[rng.uniform(size=y.shape) < missing] = -1
    return y, theta


def test_recovers_grm_parameters_with_missing_responses():
    # seed 11: 3,000 persons, 2 factors x 5 items with 4 categories, 10% of cells missing at random
    rng = np.random.default_rng(11)
    factor = np.repeat([0, 1], 5)
    a = rng.uniform(0.8, 2.2, 10)
    tau = np.sort(rng.uniform(-1.5, 1.5, (10, 3)), axis=1)
    y, theta = _simulate(11, 3000, a, tau, factor, missing=0.1)
    fit = mml.fit(None, y, mml.Structure(4, factor))
    assert fit.converged and fit.grad_norm < 1e-4 and 0 < fit.iterations < 200
    assert np.isfinite(fit.loss_history).all() and fit.loss_history.size == fit.iterations
    assert fit.loss_history[-1] <= fit.loss_history[0]
    assert fit.mean_nll == pytest.approx(-fit.loglik / 3000, rel=1e-5)
    # stated tolerances: the sampling error of a and tau is ~0.05-0.1 at this size
    assert np.abs(fit.discrimination - a).max() < 0.25
    assert np.abs(fit.thresholds - tau).max() < 0.25
    assert np.abs(fit.cuts - fit.thresholds * fit.discrimination[:, None]).max() < 1e-6
    for f in range(2):
        assert np.corrcoef(fit.ability[:, f], theta[:, f])[0, 1] > 0.7  # 5 items of 4 categories
    assert ((fit.ability_sd > 0.2) & (fit.ability_sd < 1.0)).all()


def _binary_data():
    # seed 12: 2,000 persons, one factor of 8 binary items
    rng = np.random.default_rng(12)
    a = rng.uniform(0.7, 2.0, 8)
    b = rng.uniform(-1.2, 1.2, (8, 1))
    y, _ = _simulate(12, 2000, a, b, np.zeros(8, int))
    return y, a, b


def test_binary_2pl_is_the_two_category_case():
    y, a, b = _binary_data()
    fit = mml.fit(None, y)  # categories from the data (2), one factor
    assert fit.cuts.shape == (8, 1) and fit.ability.shape == (2000, 1)
    assert fit.converged
    assert np.abs(fit.discrimination - a).max() < 0.3
    assert np.abs(fit.thresholds - b).max() < 0.25
    # the marginal log-likelihood is the 2PL's: logit P(y = 1) = a theta - cut
    x, log_w = mml_quadrature.gauss_hermite(21)
    eta = fit.discrimination[None, :] * x[:, None] - fit.cuts[:, 0]  # (Q, I)
    node = y @ np.log(expit(eta)).T + (1 - y) @ np.log(expit(-eta)).T  # (N, Q)
    ll = np.log(np.exp(node + log_w).sum(1)).sum()
    assert fit.loglik == pytest.approx(ll, rel=1e-5)


def test_fixed_iterations_and_bad_input():
    y, _, _ = _binary_data()  # same shapes as above: the compiled program is reused
    fit = mml.fit(None, y, mml.Structure(2), mml.MMLSettings(max_iter=3, tol=0.0))
    assert fit.iterations == 3 and not fit.converged and "max_iter=3" in fit.reason
    with pytest.raises(ValueError, match="response 2 of person 0 to item 1 is outside 0..1"):
        bad = y.copy()
        bad[0, 1] = 2
        mml.fit(None, bad, mml.Structure(2))
    with pytest.raises(ValueError, match="item 2 has no observed response"):
        bad = y.copy()
        bad[:, 2] = -1
        mml.fit(None, bad, mml.Structure(2))


def _binary_with_missing(n=2000, j=15, seed=5):
    """The simulated 2PL of the VIBO study with 10% of cells missing (item 0 always observed)."""
    rm, truth = simulate_binary(seed, n, j)
    y = rm.responses.copy()
    y[np.random.default_rng(0).uniform(size=y.shape) < 0.1] = -1
    y[:, 0] = rm.responses[:, 0]
    pick = lambda p: truth[truth.parameter == p].value.to_numpy()
    return y, pick("discrimination"), pick("difficulty"), pick("ability")


def test_2pl_with_missing_cells_recovers_items_and_calibrated_eap():
    # seed 5: 2,000 persons x 15 items, 10% missing; difficulty d of logit = a theta - d is cuts[:, 0]
    y, a, d, theta = _binary_with_missing()
    fit = mml.fit(None, y, mml.Structure(2))
    assert fit.converged
    assert np.sqrt(np.mean((fit.discrimination - a) ** 2)) < 0.12
    assert np.sqrt(np.mean((fit.cuts[:, 0] - d) ** 2)) < 0.1
    assert fit.loglik > mml_posterior.marginal_loglik(y, a, d[:, None], 2).sum()  # the maximum beats the truth
    eap, sd = fit.ability[:, 0], fit.ability_sd[:, 0]
    assert np.corrcoef(eap, theta)[0, 1] > 0.75 and 0.8 < np.mean(np.abs(eap - theta) < 1.645 * sd) < 0.97


def test_predictive_probs_in_chunks_of_cells_are_the_same(monkeypatch):
    # all at once, 15 million cells held 22 GB at the paper's 1M persons
    y, n_categories, factor, a, cuts = _tiny_problem()
    rows, cols = np.array([0, 1, 2, 2, 3]), np.array([1, 1, 0, 4, 2])
    hidden = y.copy()
    hidden[rows, cols] = -1
    whole = mml_posterior.predictive_probs(hidden, a, cuts, rows, cols, n_categories, factor, n_nodes=21)
    monkeypatch.setattr(mml_posterior, "PREDICTIVE_CELLS", 2)
    chunked = mml_posterior.predictive_probs(hidden, a, cuts, rows, cols, n_categories, factor, n_nodes=21)
    np.testing.assert_array_equal(chunked, whole)


def test_predictive_probs_match_a_dense_grid():
    y, n_categories, factor, a, cuts = _tiny_problem()
    rows, cols = np.array([0, 1, 2, 2, 3]), np.array([1, 1, 0, 4, 2])
    hidden = y.copy()
    hidden[rows, cols] = -1
    with jax.enable_x64(True):
        probs = mml_posterior.predictive_probs(hidden, a, cuts, rows, cols, n_categories, factor, n_nodes=61)
    assert probs.shape == (5, 4)
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-12)
    # P(y_ij = k | rest) = p(rest, y_ij = k) / p(rest): ratios of dense-grid marginals
    for n, (i, j) in enumerate(zip(rows, cols)):
        base = _dense_grid_posterior(hidden[i : i + 1], n_categories, factor, a, cuts)[0][0]
        for k in range(4):
            want = 0.0
            if k < n_categories[j]:
                filled = hidden[i : i + 1].copy()
                filled[0, j] = k
                want = np.exp(_dense_grid_posterior(filled, n_categories, factor, a, cuts)[0][0] - base)
            assert probs[n, k] == pytest.approx(want, abs=1e-8)
