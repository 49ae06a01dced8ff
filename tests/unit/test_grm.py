"""The shared GRM likelihood against hand-computed values, closed forms and finite differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit

from bayesirt.models import grm


def brute_force_probs(score, cuts):
    """P(Y = k) as plain differences of cumulative sigmoids (fine away from the tails)."""
    cum = np.concatenate([[1.0], expit(score - np.asarray(cuts)), [0.0]])
    return cum[:-1] - cum[1:]


def test_hand_computed_three_categories():
    # score 0.5, cuts (-1, 1): P(Y>=1) = sigmoid(1.5), P(Y>=2) = sigmoid(-0.5)
    p_ge1, p_ge2 = 1 / (1 + np.exp(-1.5)), 1 / (1 + np.exp(0.5))
    expected = np.log([1 - p_ge1, p_ge1 - p_ge2, p_ge2])
    cuts = jnp.array([[-1.0, 1.0]])
    got = [float(grm.log_prob(jnp.array([[k]]), jnp.array([[0.5]]), cuts, jnp.array([3]))[0, 0]) for k in range(3)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_category_probs_match_brute_force_and_sum_to_one(x64):
    rng = np.random.default_rng(0)
    n_cat = np.array([2, 5, 9, 4])
    cuts = np.sort(rng.normal(0, 2, (4, 8)), axis=1)
    score = rng.normal(0, 2, (6, 4))
    lp = np.asarray(grm.category_log_probs(jnp.array(score), jnp.array(cuts), jnp.array(n_cat)))
    for n in range(6):
        for i, k in enumerate(n_cat):
            np.testing.assert_allclose(
                np.exp(lp[n, i, :k]), brute_force_probs(score[n, i], cuts[i, : k - 1]), atol=1e-12
            )
            assert np.all(np.isneginf(lp[n, i, k:]))
    np.testing.assert_allclose(np.exp(lp).sum(-1), 1.0, atol=1e-12)


def test_log_prob_agrees_with_category_log_probs(x64):
    rng = np.random.default_rng(1)
    n_cat = np.array([3, 9, 6])
    cuts = jnp.array(np.sort(rng.normal(0, 2, (3, 8)), axis=1))
    score = jnp.array(rng.normal(0, 2, (50, 3)))
    y = rng.integers(0, n_cat, (50, 3))
    all_lp = grm.category_log_probs(score, cuts, jnp.array(n_cat))
    expected = np.take_along_axis(np.asarray(all_lp), y[..., None], -1)[..., 0]
    np.testing.assert_allclose(grm.log_prob(jnp.array(y), score, cuts, jnp.array(n_cat)), expected, rtol=1e-12)


def test_missing_contributes_zero_value_and_gradient():
    cuts = jnp.array([[-1.0, 0.0, 2.0]])
    f = lambda s: grm.log_prob(jnp.array([[-1]]), s, cuts, jnp.array([4])).sum()
    assert float(f(jnp.array([[0.3]]))) == 0.0
    assert float(jax.grad(f)(jnp.array([[0.3]]))[0, 0]) == 0.0


def test_extreme_scores_stay_finite_in_value_and_gradient():
    cuts = jnp.array([[-2.0, -1.0, 0.5, 3.0]])
    for s in (-80.0, -20.0, 20.0, 80.0):
        for k in range(5):
            f = lambda sc, c: grm.log_prob(jnp.array([[k]]), sc, c, jnp.array([5])).sum()  # noqa: B023  (used within this iteration only)
            v, (gs, gc) = jax.value_and_grad(f, argnums=(0, 1))(jnp.array([[s]]), cuts)
            assert np.isfinite(float(v)) and float(v) <= 0
            assert np.all(np.isfinite(gs)) and np.all(np.isfinite(gc))


def test_gradients_match_finite_differences(x64):
    rng = np.random.default_rng(2)
    n_cat = jnp.array([5, 5, 3])
    y = jnp.array(rng.integers(0, 3, (8, 3)))
    score0 = jnp.array(rng.normal(0, 1.5, (8, 3)))
    base0 = jnp.array(rng.normal(0, 1, 3))
    inc0 = jnp.array(rng.uniform(0.3, 1.5, (3, 3)))

    def f(score, base, inc):
        return grm.log_prob(y, score, grm.ordered_cuts(base, inc), n_cat).sum()

    grads = jax.grad(f, argnums=(0, 1, 2))(score0, base0, inc0)
    eps = 1e-6
    for argnum, (x0, g) in enumerate(zip((score0, base0, inc0), grads)):
        flat = np.asarray(x0).ravel()
        for j in range(flat.size):
            up, down = flat.copy(), flat.copy()
            up[j] += eps
            down[j] -= eps
            args_up = [score0, base0, inc0]
            args_down = [score0, base0, inc0]
            args_up[argnum] = jnp.array(up.reshape(x0.shape))
            args_down[argnum] = jnp.array(down.reshape(x0.shape))
            fd = (f(*args_up) - f(*args_down)) / (2 * eps)
            np.testing.assert_allclose(np.asarray(g).ravel()[j], fd, rtol=1e-6, atol=1e-8)


def test_ordered_cuts_strictly_increase():
    cuts = grm.ordered_cuts(jnp.array([-1.0, 2.0]), jnp.array([[0.1, 1e-4, 3.0], [2.0, 0.5, 0.5]]))
    np.testing.assert_allclose(cuts[0], [-1.0, -0.9, -0.8999, 2.1001], rtol=1e-5)
    assert np.all(np.diff(np.asarray(cuts), axis=1) > 0)


@pytest.mark.parametrize("x", [1e-8, 1e-3, 0.5, 0.69, 0.7, 5.0, 50.0])
def test_log1mexp_accuracy(x, x64):
    # reference: log(-expm1(-x)) is exact for small x; for x >= 0.5 the series
    # log(1 - e^-x) = -sum_k e^(-kx)/k converges fast and keeps full relative accuracy
    exact = np.log(-np.expm1(-x)) if x < 0.5 else -sum(np.exp(-k * x) / k for k in range(1, 200))
    np.testing.assert_allclose(float(grm.log1mexp(jnp.array(x))), exact, rtol=1e-12)


def test_sampling_frequencies_match_probabilities():
    score = jnp.zeros((20000, 1))
    cuts = jnp.array([[-1.0, 0.0, 1.5]])
    y = np.asarray(grm.sample(jax.random.key(0), score, cuts, jnp.array([4])))
    freq = np.bincount(y.ravel(), minlength=4) / y.size
    # binomial sd of a frequency <= 0.5/sqrt(20000) = 0.0035; 5 sd tolerance
    np.testing.assert_allclose(freq, brute_force_probs(0.0, [-1.0, 0.0, 1.5]), atol=0.018)
