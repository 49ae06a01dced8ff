"""BBVI for the LCDM: closed-form scores against autodiff, samplers, unbiasedness of the
Rao-Blackwellized estimator, control variates, the block schedule, the loss given to the driver."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.scipy.special import digamma, gammaln

from bayesirt.data.simulate_lcdm import simulate_lcdm
from bayesirt.inference.dcm import bbvi, bbvi_family, bbvi_gradients, bbvi_schedule
from bayesirt.inference.execution import training
from bayesirt.models import lcdm

Q_SMALL = np.array([[1, 0], [0, 1], [1, 1], [1, 0], [0, 1], [1, 1], [1, 0], [0, 1]])


@pytest.fixture(scope="module")
def small():
    rm, truth, q = simulate_lcdm(11, n_persons=120, n_items=8, q_matrix=Q_SMALL)
    prob = bbvi.prepare(rm.responses, q)
    settings = bbvi.BBVISettings(n_samples=20)
    params = bbvi_family.init_params(prob.n_persons, prob.design, settings)
    key = jax.random.PRNGKey(3)
    params = dict(
        params,
        rho=jax.random.normal(key, params["rho"].shape),
        chol_off=0.1 * jax.random.normal(jax.random.fold_in(key, 1), params["chol_off"].shape),
        log_diag=params["log_diag"] + 0.3 * jax.random.normal(jax.random.fold_in(key, 2), params["log_diag"].shape),
    )
    return prob, settings, params


def test_beta_score_closed_form_matches_autodiff(small):
    prob, settings, params = small
    fm = prob.data[training.SHARED]["feature_mask"]
    _, beta, _, _ = jax.jit(bbvi_family.draw, static_argnums=2)(params, jax.random.PRNGKey(0), 5, params["rho"], fm)
    h_mu, h_off, h_ld = jax.jit(bbvi_family.score_beta)(params, beta, fm)
    auto = jax.vmap(
        jax.vmap(jax.grad(bbvi_family.log_q_beta, argnums=(0, 1, 2)), (0, 0, 0, 0, 0)), (None, None, None, 0, None)
    )
    a_mu, a_off, a_ld = jax.jit(auto)(params["mu"], params["chol_off"], params["log_diag"], beta, fm)
    np.testing.assert_allclose(h_mu, a_mu, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(h_off, jnp.tril(a_off, -1), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(h_ld, a_ld, rtol=1e-4, atol=1e-4)


def test_dirichlet_and_inverse_gamma_scores_match_autodiff():
    log_d = jnp.log(jnp.array([2.0, 0.5, 7.0]))
    log_pi = jnp.log(jnp.array([0.2, 0.1, 0.7]))
    d = jnp.exp(log_d)
    closed = d * (digamma(d.sum()) - digamma(d) + log_pi)  # the seed's formula
    np.testing.assert_allclose(jax.grad(bbvi_family.log_q_pi)(log_d, log_pi), closed, rtol=1e-5)
    log_ab, s2 = jnp.log(jnp.array([3.0, 1.5])), 0.8
    a, b = jnp.exp(log_ab)
    closed = jnp.array([a * (jnp.log(b) - digamma(a) - jnp.log(s2)), a - b / s2])
    np.testing.assert_allclose(jax.grad(bbvi_family.log_q_sigma2)(log_ab, s2), closed, rtol=1e-5)


@pytest.mark.parametrize("alpha", [0.3, 2.5, 400.0])
def test_gamma_sampler_moments(alpha):
    shape = (40000,)
    kx, ku, kb = jax.random.split(jax.random.PRNGKey(1), 3)
    g = np.exp(
        bbvi_family.log_gamma_from(
            alpha,
            jax.random.normal(kx, (bbvi_family.N_PROPOSALS,) + shape),
            jax.random.uniform(ku, (bbvi_family.N_PROPOSALS,) + shape, minval=1e-12),
            jax.random.uniform(kb, shape, minval=1e-12),
        )
    )
    se = np.sqrt(alpha / shape[0])
    assert abs(g.mean() - alpha) < 5 * se
    assert abs(g.var() / alpha - 1) < 0.05


def test_categorical_sampler_frequencies():
    logits = jnp.log(jnp.array([[0.1, 0.2, 0.3, 0.4], [0.97, 0.01, 0.01, 0.01]]))
    z = bbvi_family.categorical_from(logits, jax.random.uniform(jax.random.PRNGKey(0), (40000, 2)))
    freq = np.stack([np.bincount(np.asarray(z[:, i]), minlength=4) / 40000 for i in range(2)])
    np.testing.assert_allclose(freq, np.exp(logits), atol=0.01)


def _exact_pi_gradient(params, n_persons, d0):
    """d/d log_d of the pi terms of the ELBO in closed form: E_q[sum_i log pi_(Z_i)] +
    E_q[log Dir(pi; d0)] + entropy of q(pi), with E[log pi_l] = psi(d_l) - psi(sum d)."""
    counts = jax.nn.softmax(params["rho"]).sum(0)

    def f(log_d):
        d = jnp.exp(log_d)
        e_log_pi = digamma(d) - digamma(d.sum())
        entropy = (
            gammaln(d).sum() - gammaln(d.sum()) + (d.sum() - d.size) * digamma(d.sum()) - jnp.sum((d - 1) * digamma(d))
        )
        return jnp.sum((counts + d0 - 1) * e_log_pi) + entropy

    return jax.grad(f)(params["log_d"])


@pytest.mark.parametrize("cv", [False, True])
def test_pi_gradient_is_unbiased(small, cv):
    prob, settings, params = small
    params = dict(params, log_d=jnp.log(jnp.array([5.0, 12.0, 30.0, 3.0])))
    batch = dict(prob.data, index=jnp.arange(prob.n_persons))
    f = jax.jit(
        jax.vmap(lambda k: bbvi_gradients.gradients(params, k, batch, settings, prob.n_persons, cv)[1]["log_d"])
    )
    draws = np.asarray(f(jax.random.split(jax.random.PRNGKey(7), 4000)))
    exact = np.asarray(_exact_pi_gradient(params, prob.n_persons, settings.priors.d0))
    se = draws.std(0) / np.sqrt(len(draws))
    # control variates with a leave-one-out coefficient stay unbiased
    assert np.all(np.abs(draws.mean(0) - exact) < 5 * se), (draws.mean(0), exact, se)


def _pathwise_beta_gradient(params, prob, settings, n_draws=20000):
    """Reference for the beta block: the gradient in (mu, chol_off, log_diag) of the ELBO terms
    that depend on q(beta), by reparameterisation (u = mu + C eps), with q(Z) and q(sigma^2)
    integrated exactly (E[1/sigma^2] = a/b): per-draw gradients, their mean and standard error."""
    sh = prob.data[training.SHARED]
    fm, delta, order = sh["feature_mask"], sh["delta"], sh["order"]
    qz = jax.nn.softmax(params["rho"])
    n1 = jnp.einsum("bl,bj->jl", qz, prob.data["y_obs"])
    n0 = jnp.einsum("bl,bj->jl", qz, prob.data["n_obs"])
    inv_s2 = jnp.exp(params["log_ab"][0] - params["log_ab"][1])

    def f(p, eps):
        c = bbvi_family.chol_factor(p["chol_off"], p["log_diag"], fm)
        u = p["mu"] + jnp.einsum("jkl,jl->jk", c, eps) * fm
        beta, log_jac = lcdm.monotone_beta(u, order) if settings.monotone else (u, 0.0)
        beta = beta * fm
        eta = lcdm.item_logits(beta, delta)
        lik = jnp.sum(n1 * jax.nn.log_sigmoid(eta) + n0 * jax.nn.log_sigmoid(-eta))
        return lik - 0.5 * inv_s2 * jnp.sum(fm * beta**2) + log_jac + jnp.sum(fm * p["log_diag"])

    sub = {k: params[k] for k in ("mu", "chol_off", "log_diag")}
    eps = jax.random.normal(jax.random.PRNGKey(11), (n_draws,) + params["mu"].shape)
    g = jax.jit(jax.vmap(jax.grad(f), (None, 0)))(sub, eps)
    g["chol_off"] = jnp.tril(g["chol_off"], -1)
    return (
        {k: np.asarray(v.mean(0)) for k, v in g.items()},
        {k: np.asarray(v.std(0) / np.sqrt(n_draws)) for k, v in g.items()},
    )


@pytest.mark.parametrize("monotone,cv", [(False, False), (True, False), (True, True)])
def test_beta_gradient_is_unbiased(small, monotone, cv):
    # the score-function estimate of the beta block (with monotone coefficients: q on u, the
    # Jacobian in the weight) against a pathwise reference; every component within 5 combined
    # standard errors. Power: leaving the log-Jacobian out of beta's weight moves the mu block
    # by 12 standard errors with control variates (3 without)
    prob, settings, params = small
    # a dozen persons: the likelihood's share of the weights (the estimator's noise) small
    # enough that the prior and the Jacobian terms are resolved
    n = 12
    prob = bbvi.prepare(
        np.where(np.asarray(prob.data["y_obs"][:n]) > 0, 1, np.where(np.asarray(prob.data["n_obs"][:n]) > 0, 0, -1)),
        np.asarray(Q_SMALL),
    )
    params = dict(params, rho=params["rho"][:n])
    settings = settings._replace(monotone=monotone)
    if monotone:
        mu = bbvi_family.init_params(prob.n_persons, prob.design, settings)["mu"]
        params = dict(
            params, mu=mu + 0.3 * jax.random.normal(jax.random.PRNGKey(4), mu.shape) * prob.design.feature_mask
        )
    batch = dict(prob.data, index=jnp.arange(prob.n_persons))
    keys = jax.random.split(jax.random.PRNGKey(8), 3000)
    f = jax.jit(
        jax.vmap(
            lambda k: {
                n: g
                for n, g in bbvi_gradients.gradients(params, k, batch, settings, prob.n_persons, cv)[1].items()
                if n in ("mu", "chol_off", "log_diag")
            }
        )
    )
    draws = f(keys)
    ref, ref_se = _pathwise_beta_gradient(params, prob, settings)
    fm = np.asarray(prob.design.feature_mask)
    real = {"mu": fm > 0, "log_diag": fm > 0, "chol_off": np.tril(fm[:, :, None] * fm[:, None, :], -1) > 0}
    for name, sel in real.items():
        d = np.asarray(draws[name])
        se = np.sqrt(d.var(0) / len(d) + ref_se[name] ** 2)
        z = np.abs(d.mean(0) - ref[name])[sel] / se[sel]
        assert z.max() < 5, (name, z.max(), d.mean(0)[sel][z.argmax()], ref[name][sel][z.argmax()])


def test_control_variates_reduce_variance(small):
    prob, settings, params = small
    var = bbvi.gradient_variance(jax.random.PRNGKey(0), params, prob, settings, n_repeats=32)
    assert set(var) == set(bbvi_schedule.BLOCKS)
    for block in ("beta", "pi", "sigma2"):
        assert var[block]["reduction"] > 2, (block, var[block])


def test_loss_value_and_gradient(small):
    prob, settings, params = small
    batch = dict(prob.data, index=jnp.arange(prob.n_persons), step=0)
    key = jax.random.PRNGKey(5)
    value, grad = jax.jit(jax.value_and_grad(bbvi_gradients.make_loss(settings, prob.n_persons)))(params, key, batch)
    elbo, est = jax.jit(lambda p, k, b: bbvi_gradients.gradients(p, k, b, settings, prob.n_persons, False))(
        params, key, batch
    )
    np.testing.assert_allclose(value, -elbo, rtol=1e-6)
    for name in params:
        np.testing.assert_allclose(grad[name], -est[name], rtol=1e-6, atol=1e-6)


def test_coordinate_ascent_moves_one_block_at_a_time():
    tx = bbvi_schedule.coordinate_ascent([optax.sgd(1.0)] * 4, (2, 1, 1, 3))
    params = {
        "rho": jnp.zeros(2),
        "mu": jnp.zeros(2),
        "chol_off": jnp.zeros(1),
        "log_diag": jnp.zeros(1),
        "log_d": jnp.zeros(2),
        "log_ab": jnp.zeros(2),
    }
    grads = jax.tree.map(jnp.ones_like, params)
    state = tx.init(params)
    moved = []
    for _ in range(7):
        updates, state = tx.update(grads, state, params)
        moved.append(sorted(k for k, u in updates.items() if float(jnp.abs(u).sum()) > 0))
    assert moved == [["rho"], ["rho"], ["chol_off", "log_diag", "mu"], ["log_d"], ["log_ab"], ["log_ab"], ["log_ab"]]


def test_prepare_rejects_bad_input():
    y = np.array([[0, 1], [1, 0]])
    with pytest.raises(ValueError, match="has 3 rows but the responses have 2 items"):
        bbvi.prepare(y, np.array([[1], [1], [1]]))
    with pytest.raises(ValueError, match="holds 3"):
        bbvi.prepare(np.array([[0, 3], [1, 0]]), np.array([[1], [1]]))


def test_the_substitutions_solve_lower_triangular_systems():
    rng = np.random.default_rng(0)
    c = np.tril(rng.normal(size=(3, 4, 4))) + 3 * np.eye(4)
    r = rng.normal(size=(5, 3, 4))
    want = np.linalg.solve(c, r[..., None])[..., 0]
    np.testing.assert_allclose(bbvi_family.solve_lower(jnp.asarray(c), jnp.asarray(r)), want, rtol=1e-4, atol=1e-5)
    want_t = np.linalg.solve(np.swapaxes(c, -1, -2), r[..., None])[..., 0]
    np.testing.assert_allclose(
        bbvi_family.solve_lower_transposed(jnp.asarray(c), jnp.asarray(r)), want_t, rtol=1e-4, atol=1e-5
    )
