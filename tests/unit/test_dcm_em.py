"""EM for the LCDM: a stationary point of the (penalised) marginal likelihood, missing responses,
bad input."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt.data.simulate_lcdm import simulate_lcdm
from bayesirt.inference.dcm import bbvi, dcm_em
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
        return lcdm.marginal_loglik(
            beta * des.feature_mask, jax.nn.log_softmax(theta), jnp.asarray(des.delta, jnp.float32), y_obs, n_obs
        ).sum() - 0.5 * ridge * jnp.sum(beta**2)

    return f


def test_em_reaches_a_stationary_point(data):
    y, q, _ = data
    settings = dcm_em.EMSettings(tol=1e-6, standard_errors=False)
    fit = dcm_em.fit(None, bbvi.prepare(y, q), settings)
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
    fit = dcm_em.fit(None, bbvi.prepare(y, q))
    des = lcdm.design(q)
    assert np.all(np.isfinite(fit.beta_se[des.feature_mask > 0])) and np.all(
        np.isnan(fit.beta_se[des.feature_mask == 0])
    )
    assert np.all(fit.pi_se > 0) and np.all(fit.pi_se < 0.1)
    more = dcm_em.fit(None, bbvi.prepare(np.concatenate([y] * 4), q))
    np.testing.assert_allclose(more.beta_se[des.feature_mask > 0], fit.beta_se[des.feature_mask > 0] / 2, rtol=0.1)


def test_em_rejects_bad_input():
    y = np.zeros((5, 3), int)
    with pytest.raises(ValueError, match="attribute 2 .* measured by no item"):
        dcm_em.fit(None, bbvi.prepare(y, np.array([[1, 0], [1, 0], [1, 0]])))
    with pytest.raises(ValueError, match="item 2 .* measures no attribute"):
        dcm_em.fit(None, bbvi.prepare(y, np.array([[1, 0], [0, 0], [0, 1]])))
    with pytest.raises(ValueError, match="holds 5"):
        dcm_em.fit(None, bbvi.prepare(np.full((5, 3), 5), np.eye(3, dtype=int)))


# ---------------------------------------------------------------------------------------------
# the monotonicity option (main effects >= 0, interaction >= -min main effect)


def _is_monotone(beta, des, tol=0.0):
    mains = np.where(des.order == 1, beta, np.inf)
    inter_ok = [beta[j, 3] >= -mains[j, 1:3].min() - tol for j in range(len(beta)) if des.n_features[j] == 4]
    return bool(np.all(beta[des.order == 1] >= -tol) and all(inter_ok))


def _loglik64(beta, log_pi, y, q, ridge):
    """Penalised marginal log-likelihood in float64 numpy (an independent evaluation)."""
    from scipy.special import log_expit, logsumexp

    des = lcdm.design(q)
    eta = np.einsum("jlk,jk->jl", des.delta, beta * des.feature_mask)
    y1, y0 = (y == 1).astype(float), (y == 0).astype(float)
    ll = y1 @ log_expit(eta) + y0 @ log_expit(-eta) + log_pi
    return logsumexp(ll, axis=1).sum() - 0.5 * ridge * np.sum((beta * des.feature_mask) ** 2)


def test_monotone_em_equals_plain_em_when_the_mle_is_monotone(data):
    y, q, _ = data
    settings = dcm_em.EMSettings(tol=1e-6, standard_errors=False)
    plain = dcm_em.fit(None, bbvi.prepare(y, q), settings)
    mono = dcm_em.fit(None, bbvi.prepare(y, q), settings._replace(monotone=True))
    des = lcdm.design(q)
    assert plain.converged and mono.converged
    assert _is_monotone(plain.beta, des)  # this data set's unconstrained optimum is monotone ...
    assert _is_monotone(mono.beta, des)
    # ... so the constrained EM finds the same optimum (float32 EM, tolerance 0.01 in log-likelihood)
    assert mono.loglik == pytest.approx(plain.loglik, abs=0.01)
    np.testing.assert_allclose(mono.beta, plain.beta, atol=0.01)


# items whose true main effect is 0: at N = 300 the unconstrained MLE of some of them is negative
Q_ZERO = np.array([[1, 0]] * 5 + [[0, 1]] * 5 + [[1, 1]] * 2 + [[1, 0]] * 3 + [[0, 1]] * 3)
BETA_ZERO = [[-1, 3]] * 10 + [[-1, 1.5, 1.5, 0.5]] * 2 + [[-0.5, 0.0]] * 6


@pytest.fixture(scope="module")
def zero_main_data():
    rng = np.random.default_rng(2)
    des = lcdm.design(Q_ZERO)
    beta = lcdm.pack_beta(BETA_ZERO, des.delta.shape[2])
    z = rng.integers(0, 4, 300)
    eta = np.einsum("jlk,jk->jl", des.delta, beta)[:, z].T
    return (rng.uniform(size=eta.shape) < 1 / (1 + np.exp(-eta))).astype(int)


def test_monotone_em_sits_on_the_boundary_with_the_kkt_condition(zero_main_data):
    y, q = zero_main_data, Q_ZERO
    settings = dcm_em.EMSettings(tol=1e-6, max_iter=5000)
    plain = dcm_em.fit(None, bbvi.prepare(y, q), settings._replace(standard_errors=False))
    mono = dcm_em.fit(None, bbvi.prepare(y, q), settings._replace(monotone=True))
    des = lcdm.design(q)
    assert plain.converged and mono.converged
    zero_items = np.arange(12, 18)
    assert (plain.beta[zero_items, 1] < -0.05).sum() >= 2  # the unconstrained MLE leaves the cone
    assert _is_monotone(mono.beta, des) and np.all(mono.beta[des.order == 1] >= 0)
    # a constrained maximum is no higher than the unconstrained one (float32 slack 0.01)
    assert mono.loglik <= plain.loglik + 0.01 and mono.loglik < plain.loglik - 0.1
    # KKT, by central finite differences of the float64 log-likelihood in each main effect:
    # zero gradient inside the cone, gradient <= 0 on its boundary (main effect ~ 0)
    h = 1e-4
    boundary = 0
    for j, k in zip(*np.nonzero(des.order == 1)):
        e = np.zeros_like(mono.beta)
        e[j, k] = h
        g = (
            _loglik64(mono.beta + e, mono.log_pi, y, q, settings.ridge)
            - _loglik64(mono.beta - e, mono.log_pi, y, q, settings.ridge)
        ) / (2 * h)
        if mono.beta[j, k] < 1e-3:
            boundary += 1
            assert g <= 0.05, (j, k, g)
            assert np.isnan(mono.beta_se[j, k])  # no Wald interval on the boundary
        else:
            assert abs(g) < 0.05, (j, k, g)
            assert np.isfinite(mono.beta_se[j, k])
    assert boundary >= 2
    # the item with a negative unconstrained main effect is the one on the boundary
    for j in zero_items:
        if plain.beta[j, 1] < -0.05:
            assert mono.beta[j, 1] < 1e-3


def test_monotone_em_refuses_items_with_three_attributes():
    y = np.zeros((5, 3), int)
    with pytest.raises(ValueError, match="monotonicity constraints support items measuring at most 2"):
        dcm_em.fit(None, bbvi.prepare(y, np.array([[1, 1, 1], [1, 0, 0], [0, 1, 0]])), dcm_em.EMSettings(monotone=True))
