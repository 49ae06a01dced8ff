"""EM for the LCDM: a stationary point of the (penalised) marginal likelihood, missing responses,
bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt.data.simulate_lcdm import simulate_lcdm
from bayesirt.inference import dcm_em
from bayesirt.models import lcdm

Q = np.array([[1, 0], [0, 1], [1, 1], [1, 0], [0, 1], [1, 1], [1, 0], [0, 1], [1, 1], [1, 0]])


@pytest.fixture(scope="module")
def data():
    rm, truth, q = simulate_lcdm(4, n_persons=400, n_items=10, q_matrix=Q)
    y = rm.responses.copy()
    y[np.random.default_rng(0).uniform(size=y.shape) < 0.2] = -1
    return y, q, truth


def _objective(fit, y, q, ridge):
    des = lcdm.design(q)
    y_obs, n_obs = lcdm.observed_counts(y)

    def f(beta, theta):
        return (lcdm.marginal_loglik(beta * des.feature_mask, jax.nn.log_softmax(theta), jnp.asarray(des.delta, jnp.float32),
                                     y_obs, n_obs).sum() - 0.5 * ridge * jnp.sum(beta ** 2))
    return f


def test_em_reaches_a_stationary_point(data):
    y, q, _ = data
    settings = dcm_em.EMSettings(tol=1e-6, standard_errors=False)
    fit = dcm_em.fit_em(y, q, settings)
    assert fit.converged and fit.n_iter > 2
    f = _objective(fit, y, q, settings.ridge)
    g_beta, g_theta = jax.grad(f, argnums=(0, 1))(jnp.asarray(fit.beta), jnp.asarray(fit.log_pi))
    assert float(jnp.max(jnp.abs(g_beta))) < 0.05 and float(jnp.max(jnp.abs(g_theta))) < 0.05
    # and higher than at the truth or a perturbed point
    assert fit.loglik > float(f(fit.beta + 0.05, fit.log_pi))
    assert np.isclose(np.exp(fit.log_pi).sum(), 1.0, atol=1e-5)
    assert np.allclose(np.exp(fit.log_posterior).sum(1), 1.0, atol=1e-5)


def test_standard_errors_are_finite_and_shrink_with_information(data):
    y, q, _ = data
    fit = dcm_em.fit_em(y, q)
    des = lcdm.design(q)
    assert np.all(np.isfinite(fit.beta_se[des.feature_mask > 0])) and np.all(np.isnan(fit.beta_se[des.feature_mask == 0]))
    assert np.all(fit.pi_se > 0) and np.all(fit.pi_se < 0.1)
    more = dcm_em.fit_em(np.concatenate([y] * 4), q)
    np.testing.assert_allclose(more.beta_se[des.feature_mask > 0], fit.beta_se[des.feature_mask > 0] / 2, rtol=0.1)


def test_em_rejects_bad_input():
    y = np.zeros((5, 3), int)
    with pytest.raises(ValueError, match="attribute 2 .* measured by no item"):
        dcm_em.fit_em(y, np.array([[1, 0], [1, 0], [1, 0]]))
    with pytest.raises(ValueError, match="item 2 .* measures no attribute"):
        dcm_em.fit_em(y, np.array([[1, 0], [0, 0], [0, 1]]))
    with pytest.raises(ValueError, match="holds 5"):
        dcm_em.fit_em(np.full((5, 3), 5), np.eye(3, dtype=int))
