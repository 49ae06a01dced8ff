"""IWAE with DReG gradients (inference/variational/iwae.py)."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt.data import simulate_mgrm as sm
from bayesirt.evaluation import loglik
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import iwae, networks
from bayesirt.models import mgrm


def problem(n_persons=16, n_factors=2, seed=0):
    rm, truth = sm.simulate_mgrm(seed, n_persons, n_items=6, n_categories=3, n_factors=n_factors)
    y = rm.responses.astype(np.int32)
    y[0, :2] = -1
    st = mgrm.structure(rm.n_categories, n_factors, sm.q_matrix(rm), positive_loadings=True)
    return jnp.asarray(y), st, mgrm.truth_params(st, truth)


def test_encoder_input_marks_missing_cells():
    y = jnp.asarray([[0, 2, -1], [1, -1, -1]])
    f = np.asarray(networks.response_features(y, 3))
    assert f.shape == (2, 3 * 3 + 3)
    np.testing.assert_array_equal(f[0], [1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0])
    np.testing.assert_array_equal(f[1], [0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0])


def manual_terms(params, key, y, st, cfg):
    """The IW-ELBO and the two gradient estimators written out directly (reference)."""
    mu, log_sigma, lower = iwae.encode(params["encoder"], y, st, cfg)
    eps = jax.random.normal(key, (cfg.n_importance,) + mu.shape)

    def log_w_of(model, enc, fixed_q):
        m, ls, lw = iwae.encode(enc, y, st, cfg)
        z = iwae.gaussian_draw(m, ls, lw, eps)
        qm, qls, qlw = fixed_q if fixed_q is not None else (m, ls, lw)
        return mgrm.log_joint(dict(model, ability=z), y, st) - iwae.gaussian_log_q(z, qm, qls, qlw)

    log_w = log_w_of(params["model"], params["encoder"], None)
    w = jax.nn.softmax(log_w, axis=0)
    # theta: sum_r w_r grad log w_r
    g_model = jax.grad(lambda m: jnp.sum(w * log_w_of(m, params["encoder"], None)) / y.shape[0] * -1)(params["model"])
    # phi (DReG): sum_r w_r^2 d log w_r / d z_r  d z_r / d phi, with q's parameters fixed
    fixed = jax.lax.stop_gradient((mu, log_sigma, lower))
    g_enc = jax.grad(lambda e: -jnp.sum(w**2 * log_w_of(params["model"], e, fixed)) / y.shape[0])(params["encoder"])
    value = -jnp.mean(jax.scipy.special.logsumexp(log_w, 0) - jnp.log(cfg.n_importance))
    return value, g_model, g_enc


@pytest.mark.parametrize("full", [False, True])
def test_loss_value_and_dreg_gradients_match_the_estimators(full):
    y, st, params0 = problem()
    cfg = iwae.IWAESettings(n_importance=7, hidden=(8,), full_covariance=full)
    params = iwae.init(jax.random.key(1), st, cfg)
    params["model"] = params0
    params["model"]["loadings_raw"] = params["model"]["loadings_raw"] - 0.3  # away from truth
    if full:  # make the off-diagonal part of L clearly non-zero
        params["encoder"][-1]["b"] = params["encoder"][-1]["b"].at[-1].set(0.7)
    key = jax.random.key(3)
    value, grads = jax.jit(jax.value_and_grad(iwae.loss_fn(st, cfg)))(params, key, {"y": y, "index": jnp.arange(16)})
    want_value, g_model, g_enc = jax.jit(lambda p, k: manual_terms(p, k, y, st, cfg))(params, key)
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(grads["model"]), jax.tree.leaves(g_model)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    for a, b in zip(jax.tree.leaves(grads["encoder"]), jax.tree.leaves(g_enc)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_full_covariance_log_q_is_the_multivariate_normal_density():
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(0)
    mu, log_sigma = rng.normal(size=(1, 3)), rng.normal(size=(1, 3)) * 0.3
    lower = np.tril(rng.normal(size=(1, 3, 3)), -1)
    chol = lower[0] + np.diag(np.exp(log_sigma[0]))
    z = rng.normal(size=(5, 1, 3))
    got = np.asarray(iwae.gaussian_log_q(jnp.asarray(z), jnp.asarray(mu), jnp.asarray(log_sigma), jnp.asarray(lower)))
    np.testing.assert_allclose(got[:, 0], multivariate_normal(mu[0], chol @ chol.T).logpdf(z[:, 0]), rtol=1e-5)


def test_plain_gradient_is_gradient_of_the_objective_fd():
    # without DReG the gradient is that of the IW-ELBO at fixed noise: check one encoder
    # weight and one model parameter against central finite differences (float64)
    y, st, params0 = problem()
    cfg = iwae.IWAESettings(n_importance=4, hidden=(8,), dreg=False)
    with jax.enable_x64(True):
        params = iwae.init(jax.random.key(1), st, cfg)
        params["model"] = params0
        params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), params)
        f = jax.jit(lambda p: iwae.loss_fn(st, cfg)(p, jax.random.key(3), {"y": y, "index": jnp.arange(16)}))
        g = jax.grad(f)(params)
        h = 1e-6
        for path, idx in ((("encoder", 0, "w"), (3, 2)), (("model", "cut_base"), (1,)), (("model", "corr_raw"), (0,))):

            def bump(d):
                p = jax.tree.map(lambda a: a, params)
                leaf = p
                for k in path[:-1]:  # noqa: B023  (bump is called within this iteration only)
                    leaf = leaf[k]
                leaf[path[-1]] = leaf[path[-1]].at[idx].add(d)  # noqa: B023  (bump is called within this iteration only)
                return f(p)

            got = g
            for k in path:
                got = got[k]
            np.testing.assert_allclose(got[idx], (bump(h) - bump(-h)) / (2 * h), rtol=1e-5, atol=1e-8)


def test_iw_elbo_increases_with_r_towards_the_exact_loglik():
    # fixed model and a deliberately poor encoder; IW-ELBO averaged over 200 keys (seed 0):
    # R = 1 < R = 5 < R = 50 <= exact log-likelihood (quadrature), all persons together
    y, st, params0 = problem(n_persons=30, n_factors=1)
    exact = loglik.quadrature_loglik(params0, st, np.asarray(y)).mean()
    values = []
    for r in (1, 5, 50):
        cfg = iwae.IWAESettings(n_importance=r, hidden=(8,))
        params = iwae.init(jax.random.key(1), st, cfg)
        params["model"] = params0
        loss = jax.jit(lambda k: iwae.loss_fn(st, cfg)(params, k, {"y": y, "index": jnp.arange(30)}))  # noqa: B023  (used within this iteration only)
        values.append(-np.mean([float(loss(jax.random.key(s))) for s in range(200)]))
    assert values[0] < values[1] < values[2] <= exact + 0.01
    assert exact - values[2] < exact - values[0]


def test_short_fit_improves_the_objective_and_records_convergence():
    rm, _ = sm.simulate_mgrm(1, 600, n_items=8, n_categories=3, n_factors=2)
    st = mgrm.structure(rm.n_categories, 2, sm.q_matrix(rm), positive_loadings=True)
    cfg = iwae.IWAESettings(n_importance=3, hidden=(16,), learning_rate=0.01)
    settings = TrainSettings(
        learning_rate=0.01,
        min_learning_rate=0.001,
        batch_size=100,
        max_steps=400,
        min_steps=100,
        check_every=50,
        window=50,
        progress_every=0,
    )
    res = iwae.fit(jax.random.key(0), rm.responses, st, replace(cfg, train=settings))
    assert np.isfinite(res.losses).all()
    assert res.losses[-50:].mean() < res.losses[:50].mean() - 0.1
    assert res.steps <= 400


def _warmup_setup(warmup_steps, full=False):
    y, st, params0 = problem()
    cfg = iwae.IWAESettings(n_importance=7, hidden=(8,), full_covariance=full, warmup_steps=warmup_steps)
    params = iwae.init(jax.random.key(1), st, cfg)
    params["model"] = params0
    params["model"]["loadings_raw"] = params["model"]["loadings_raw"] - 0.3
    return y, st, cfg, params


def test_no_warmup_is_exactly_the_existing_loss():
    # warmup_steps = 0 (the default) ignores the step: value and gradients bit for bit equal
    # to the loss evaluated without a step; with warm-up, a step past the warm-up gives the
    # exact IW-ELBO again (up to rounding: beta multiplies log p(z) - log q)
    y, st, cfg0, params = _warmup_setup(0)
    key = jax.random.key(3)
    vg = jax.jit(jax.value_and_grad(iwae.loss_fn(st, cfg0)))
    v_ref, g_ref = vg(params, key, {"y": y, "index": jnp.arange(16)})
    v0, g0 = vg(params, key, {"y": y, "index": jnp.arange(16), "step": jnp.asarray(0)})
    assert float(v0) == float(v_ref)
    for a, b in zip(jax.tree.leaves(g0), jax.tree.leaves(g_ref)):
        np.testing.assert_array_equal(a, b)
    cfg = iwae.IWAESettings(n_importance=7, hidden=(8,), warmup_steps=100)
    v_after, g_after = jax.jit(jax.value_and_grad(iwae.loss_fn(st, cfg)))(
        params, key, {"y": y, "index": jnp.arange(16), "step": jnp.asarray(250)}
    )
    np.testing.assert_allclose(v_after, v_ref, rtol=1e-6)
    for a, b in zip(jax.tree.leaves(g_after), jax.tree.leaves(g_ref)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("step", [0, 30])
def test_warmup_anneals_prior_and_entropy_terms_in_the_weights(step):
    # beta = step / warmup_steps: log w_r = log p(x | z_r) + beta (log p(z_r) - log q(z_r | x));
    # the value is minus the annealed IW-ELBO, the decoder gradient sum_r w~_r grad log w_r and
    # the encoder gradient the DReG form sum_r w~_r (1 - beta + beta w~_r) d log w_r / d z_r dz_r / d phi
    y, st, cfg, params = _warmup_setup(100)
    beta = step / 100
    key = jax.random.key(3)
    batch = {"y": y, "index": jnp.arange(16), "step": jnp.asarray(step)}
    value, grads = jax.jit(jax.value_and_grad(iwae.loss_fn(st, cfg)))(params, key, batch)

    def reference(params):
        mu, log_sigma, lower = iwae.encode(params["encoder"], y, st, cfg)
        eps = jax.random.normal(key, (cfg.n_importance,) + mu.shape)

        def log_w_of(model, enc, fixed_q):
            m, ls, lw = iwae.encode(enc, y, st, cfg)
            z = iwae.gaussian_draw(m, ls, lw, eps)
            qm, qls = fixed_q if fixed_q is not None else (m, ls)
            return mgrm.log_likelihood(dict(model, ability=z), y, st) + beta * (
                mgrm.log_prior(dict(model, ability=z), st) - iwae.gaussian_log_q(z, qm, qls)
            )

        log_w = log_w_of(params["model"], params["encoder"], None)
        w = jax.nn.softmax(log_w, axis=0)
        g_model = jax.grad(lambda m: -jnp.sum(w * log_w_of(m, params["encoder"], None)) / 16)(params["model"])
        fixed = jax.lax.stop_gradient((mu, log_sigma))
        scale = w * (1.0 - beta + beta * w)
        g_enc = jax.grad(lambda e: -jnp.sum(scale * log_w_of(params["model"], e, fixed)) / 16)(params["encoder"])
        return -jnp.mean(jax.scipy.special.logsumexp(log_w, 0) - jnp.log(7.0)), g_model, g_enc

    want_value, g_model, g_enc = jax.jit(reference)(params)
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    for a, b in zip(jax.tree.leaves(grads["model"]), jax.tree.leaves(g_model)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    for a, b in zip(jax.tree.leaves(grads["encoder"]), jax.tree.leaves(g_enc)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    # and it is not the exact objective (beta < 1 changes the weights)
    exact = jax.jit(iwae.loss_fn(st, iwae.IWAESettings(n_importance=7, hidden=(8,))))(params, key, batch)
    assert abs(float(value) - float(exact)) > 1e-3


def test_warmup_step_reaches_the_loss_inside_the_training_loop():
    # a fit with warm-up passes the step through the driver's lax.scan (its first loss, at
    # beta = 0, differs from the exact fit's with the same key and initial values), and the
    # convergence rule waits for the end of the warm-up
    rm, _ = sm.simulate_mgrm(1, 400, n_items=8, n_categories=3, n_factors=2)
    st = mgrm.structure(rm.n_categories, 2, sm.q_matrix(rm), positive_loadings=True)
    settings = TrainSettings(
        learning_rate=0.01,
        min_learning_rate=0.001,
        batch_size=100,
        max_steps=300,
        min_steps=50,
        check_every=50,
        window=50,
        rel_tol=1.0,
        patience=1,
        progress_every=0,
    )
    res0 = iwae.fit(
        jax.random.key(0), rm.responses, st, replace(iwae.IWAESettings(n_importance=3, hidden=(8,)), train=settings)
    )
    res = iwae.fit(
        jax.random.key(0),
        rm.responses,
        st,
        replace(iwae.IWAESettings(n_importance=3, hidden=(8,), warmup_steps=150), train=settings),
    )
    assert res0.steps == 100  # rel_tol = 1: stops at the first possible check
    assert res.steps == 150 + 2 * 50
    assert abs(res.losses[0] - res0.losses[0]) > 1e-3
    np.testing.assert_allclose(res.losses[200:250].mean(), res0.losses[50:100].mean(), rtol=0.2)
