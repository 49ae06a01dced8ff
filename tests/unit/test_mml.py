"""MML by quadrature for the unidimensional 2PL, and the one importance-sampled evaluator."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt.data.simulate_binary import simulate_binary
from bayesirt.evaluation import mml, person_loglik
from bayesirt.models import irt2pl


def data(n=2000, j=15, seed=5):
    rm, truth = simulate_binary(seed, n, j)
    y = rm.responses.copy()
    y[np.random.default_rng(0).uniform(size=y.shape) < 0.1] = -1
    y[:, 0] = rm.responses[:, 0]
    pick = lambda p: truth[truth.parameter == p].value.to_numpy()
    return y, pick("discrimination"), pick("difficulty"), pick("ability")


def test_em_recovers_items_and_increases_the_likelihood():
    y, a, d, theta = data()
    fit = mml.fit(y)
    assert fit.converged
    assert np.sqrt(np.mean((fit.discrimination - a) ** 2)) < 0.12
    assert np.sqrt(np.mean((fit.difficulty - d) ** 2)) < 0.1
    assert fit.loglik > mml.marginal_loglik(y, a, d).sum()  # the maximum beats the truth
    mean, sd = mml.eap(y, fit.discrimination, fit.difficulty)
    assert np.corrcoef(mean, theta)[0, 1] > 0.75 and 0.8 < np.mean(np.abs(mean - theta) < 1.645 * sd) < 0.97


def test_quadrature_is_converged_and_matches_brute_force():
    y, a, d, _ = data(n=20, j=6)
    q61 = mml.marginal_loglik(y, a, d, 61)
    np.testing.assert_allclose(q61, mml.marginal_loglik(y, a, d, 121), atol=1e-9)
    grid = np.linspace(-8, 8, 20001)
    eta = a[:, None] * grid - d[:, None]
    lp = np.where(y[:, :, None] == 1, -np.log1p(np.exp(-eta)), np.where(y[:, :, None] == 0, -np.log1p(np.exp(eta)), 0)).sum(1)
    brute = np.log(np.trapezoid(np.exp(lp) * np.exp(-grid ** 2 / 2) / np.sqrt(2 * np.pi), grid, axis=1))
    np.testing.assert_allclose(q61, brute, atol=1e-6)


def test_importance_sampling_matches_quadrature():
    y, a, d, _ = data(n=300, j=10)
    st = irt2pl.Structure("2pl", 10, 1)
    items = {"log_discrimination": jnp.log(jnp.asarray(a, jnp.float32))[:, None], "difficulty": jnp.asarray(d, jnp.float32)}
    ll = lambda yb, t: irt2pl.log_lik(yb, t, items, st)
    est = person_loglik.laplace_importance_loglik(jax.random.key(0), ll, y, 1, n_samples=500)
    err = np.abs(est - mml.marginal_loglik(y, a, d))
    assert err.max() < 0.05 and err.mean() < 0.01, (err.max(), err.mean())


def test_bad_responses():
    y, *_ = data(n=50, j=5)
    y[2, 3] = 3
    with pytest.raises(ValueError, match="person 2 to item 3"):
        mml.fit(y)
