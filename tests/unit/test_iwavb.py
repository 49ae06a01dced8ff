"""Importance-weighted adversarial VB (inference/variational/iwavb.py)."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import optax
from scipy.stats import norm

from bayesirt.data import simulate_mgrm as sm
from bayesirt.evaluation import loglik
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import iw_bound, iwae, iwavb, iwavb_networks, networks
from bayesirt.models import mgrm


def problem(n_persons=16, seed=0):
    rm, truth = sm.simulate_mgrm(seed, n_persons, n_items=6, n_categories=3, n_factors=2)
    y = rm.responses.astype(np.int32)
    y[0, :2] = -1
    st = mgrm.structure(rm.n_categories, 2, sm.q_matrix(rm), positive_loadings=True)
    return jnp.asarray(y), st, mgrm.truth_params(st, truth)


def test_log_q_change_of_variables_includes_the_jacobian():
    # q~ = N(m, s^2) per dimension and z = mu + sigma z~; with the optimal discriminator
    # T* = log q~(z~) - log N(z~; 0, 1) the formula must give log N(z; mu + sigma m, (sigma s)^2)
    rng = np.random.default_rng(0)
    m, s = np.array([0.3, -0.5]), np.array([0.7, 1.4])
    mu, log_sigma = np.array([1.0, -2.0]), np.log(np.array([0.5, 2.0]))
    zt = rng.normal(size=(9, 2))
    t_star = (norm.logpdf(zt, m, s) - norm.logpdf(zt)).sum(-1)
    got = np.asarray(iwavb_networks.log_q_from_t(jnp.asarray(t_star), jnp.asarray(zt), jnp.asarray(log_sigma)))
    z = mu + np.exp(log_sigma) * zt
    want = norm.logpdf(z, mu + np.exp(log_sigma) * m, np.exp(log_sigma) * s).sum(-1)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def gaussian_iwavb(st, cfg, key):
    """IWAVB parameters whose q is exactly Gaussian (noise branch zero) and whose T is 0."""
    params = iwavb.init(key, st, cfg)
    params["encoder"]["noise"] = jax.tree.map(jnp.zeros_like, params["encoder"]["noise"])
    params["discriminator"]["net"] = jax.tree.map(jnp.zeros_like, params["discriminator"]["net"])
    return params


def test_reduces_to_iwae_when_q_is_gaussian_and_t_is_zero():
    # same Gaussian q, same noise: identical IW-ELBO and decoder gradient, and the encoder
    # gradient through mu and sigma equals IWAE's DReG gradient
    y, st, truth = problem()
    cfg = iwavb.IWAVBSettings(
        n_importance=6, encoder_hidden=8, noise_hidden=(4,), discriminator_hidden=(8,), gauge_weight=0.0
    )
    params = gaussian_iwavb(st, cfg, jax.random.key(1))
    params["model"] = truth
    key = jax.random.key(2)
    batch = {"y": y, "index": jnp.arange(16)}
    value, grads = jax.jit(jax.value_and_grad(iwavb.loss_fn(st, cfg)))(params, key, batch)

    # the equivalent IWAE: encoder = trunk then head, eps drawn as IWAVB draws it
    k_eps, _ = jax.random.split(key)
    feats = networks.response_features(y, st.max_categories)

    def iwae_loss(model, trunk, head):
        h = networks.gelu(feats @ trunk[0]["w"] + trunk[0]["b"])
        mu, ls = jnp.split(networks.apply_mlp(head, h), 2, -1)
        eps = jax.random.normal(k_eps, (6, 16, 2))
        z = mu + jnp.exp(ls) * eps

        def f(mm, zz, aux):
            yy, m_, l_ = aux
            return mgrm.log_joint(dict(mm, ability=zz), yy, st) - iwae.gaussian_log_q(zz, m_, l_)

        lw = iw_bound.dreg_log_weights(f, model, z, (y, jax.lax.stop_gradient(mu), jax.lax.stop_gradient(ls)))
        v, sur = iw_bound.dreg_objective(lw)
        return -jnp.mean(v + sur - jax.lax.stop_gradient(sur))

    want_value, want = jax.jit(jax.value_and_grad(iwae_loss, argnums=(0, 1, 2)))(
        truth, params["encoder"]["trunk"], params["encoder"]["head"]
    )
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    for got, ref in (
        (grads["model"], want[0]),
        (grads["encoder"]["trunk"], want[1]),
        (grads["encoder"]["head"], want[2]),
    ):
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(ref)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_discriminator_gradient_only_from_its_objective():
    # the IW-ELBO part holds psi fixed: the discriminator's gradient must equal that of
    # -d (Algorithm 2), computed here separately
    y, st, truth = problem()
    cfg = iwavb.IWAVBSettings(n_importance=4, encoder_hidden=8, noise_hidden=(4,), discriminator_hidden=(8,))
    params = iwavb.init(jax.random.key(3), st, cfg)
    key = jax.random.key(4)
    grads = jax.jit(jax.grad(iwavb.loss_fn(st, cfg)))(params, key, {"y": y, "index": jnp.arange(16)})
    k_eps, k_zeta = jax.random.split(key)
    feats = networks.response_features(y, st.max_categories)
    eps = jax.random.normal(k_eps, (4, 16, 2))
    u, _, _ = iwavb_networks.encode(params["encoder"], feats, eps, cfg)
    zeta = jax.random.normal(k_zeta, u.shape)

    def minus_d(disc):
        tq = iwavb_networks.discriminator(disc, feats, u, cfg)
        t0 = iwavb_networks.discriminator(disc, feats, zeta, cfg)
        return -jnp.mean(jax.nn.log_sigmoid(tq) + jax.nn.log_sigmoid(-t0))

    want = jax.jit(jax.grad(minus_d))(params["discriminator"])
    for a, b in zip(jax.tree.leaves(grads["discriminator"]), jax.tree.leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-7)


def test_discriminator_learns_the_log_density_ratio():
    # fixed q~ = N(0.5, 0.6^2) in one dimension against N(0, 1), x ignored (one person
    # pattern); after 1500 Adam steps T(z~) matches log q~ - log N within 0.15 on |z~| < 1
    cfg = iwavb.IWAVBSettings(discriminator_hidden=(32, 32))
    st = mgrm.structure([3], 1)
    params = iwavb.init(jax.random.key(0), st, cfg)["discriminator"]
    feats = networks.response_features(jnp.zeros((64, 1), jnp.int32), 3)
    opt = optax.adam(3e-3)

    @jax.jit
    def step(p, s, key):
        k1, k2 = jax.random.split(key)
        zq = 0.5 + 0.6 * jax.random.normal(k1, (8, 64, 1))
        z0 = jax.random.normal(k2, (8, 64, 1))

        def loss(p):
            return -jnp.mean(
                jax.nn.log_sigmoid(iwavb_networks.discriminator(p, feats, zq, cfg))
                + jax.nn.log_sigmoid(-iwavb_networks.discriminator(p, feats, z0, cfg))
            )

        g = jax.grad(loss)(p)
        upd, s = opt.update(g, s, p)
        return optax.apply_updates(p, upd), s

    s = opt.init(params)
    for i in range(1500):
        params, s = step(params, s, jax.random.key(i))
    grid = jnp.linspace(-1, 1, 9)[:, None, None] * jnp.ones((1, 64, 1))
    t = np.asarray(iwavb_networks.discriminator(params, feats, grid, cfg))[:, 0]
    g = np.linspace(-1, 1, 9)
    want = norm.logpdf(g, 0.5, 0.6) - norm.logpdf(g)
    np.testing.assert_allclose(t, want, atol=0.15)


def test_short_fit_is_finite_and_improves():
    rm, _ = sm.simulate_mgrm(1, 600, n_items=8, n_categories=3, n_factors=2)
    st = mgrm.structure(rm.n_categories, 2, sm.q_matrix(rm), positive_loadings=True)
    cfg = iwavb.IWAVBSettings(
        n_importance=4,
        encoder_hidden=16,
        noise_hidden=(8,),
        discriminator_hidden=(16, 8),
        learning_rate=0.01,
        discriminator_learning_rate=0.02,
    )
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
    res = iwavb.fit(jax.random.key(0), rm.responses, st, replace(cfg, train=settings))
    assert np.isfinite(res.losses).all()
    assert res.losses[-50:].mean() < res.losses[:50].mean() - 0.1
    # the IW-ELBO is a lower bound on log p(x) only if T is right: it must not run away above
    # the fitted model's log-likelihood (method-independent estimate, 500 draws), which is the
    # sign of an encoder fooling the discriminator; tolerance 0.1 nats per person
    ll = loglik.laplace_is_loglik(jax.random.key(1), res.params["model"], st, rm.responses, n_samples=500)
    assert -res.losses[-50:].mean() < ll.mean() + 0.1


def test_no_warmup_is_exactly_the_existing_loss_and_step0_drops_prior_and_entropy():
    y, st, truth = problem()
    cfg0 = iwavb.IWAVBSettings(n_importance=4, encoder_hidden=8, noise_hidden=(4,), discriminator_hidden=(8, 8))
    params = iwavb.init(jax.random.key(3), st, cfg0)
    params["model"] = truth
    key = jax.random.key(4)
    base = {"y": y, "index": jnp.arange(16)}
    vg = jax.jit(jax.value_and_grad(iwavb.loss_fn(st, cfg0)))
    v_ref, g_ref = vg(params, key, base)
    v0, g0 = vg(params, key, dict(base, step=jnp.asarray(0)))
    assert float(v0) == float(v_ref)
    for a, b in zip(jax.tree.leaves(g0), jax.tree.leaves(g_ref)):
        np.testing.assert_array_equal(a, b)

    # warm-up, step 0: beta = 0, log w_r = log p(x | z_r) with the same draws
    cfg = iwavb.IWAVBSettings(
        n_importance=4, encoder_hidden=8, noise_hidden=(4,), discriminator_hidden=(8, 8), warmup_steps=50
    )
    v_w, g_w = jax.jit(jax.value_and_grad(iwavb.loss_fn(st, cfg)))(params, key, dict(base, step=jnp.asarray(0)))
    k_eps, _ = jax.random.split(key)
    feats = networks.response_features(y, st.max_categories)
    u, mu, log_sigma = iwavb_networks.encode(params["encoder"], feats, jax.random.normal(k_eps, (4, 16, 2)), cfg)
    z = mu + jnp.exp(log_sigma) * u
    want = -jnp.mean(iw_bound.iw_elbo(mgrm.log_likelihood(dict(truth, ability=z), y, st)))
    np.testing.assert_allclose(v_w, want, rtol=1e-5)
    assert abs(float(v_w) - float(v_ref)) > 1e-3
    # the discriminator's own objective does not depend on the warm-up
    for a, b in zip(jax.tree.leaves(g_w["discriminator"]), jax.tree.leaves(g_ref["discriminator"])):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    # after the warm-up: the exact objective again (up to rounding)
    v_after = jax.jit(iwavb.loss_fn(st, cfg))(params, key, dict(base, step=jnp.asarray(80)))
    np.testing.assert_allclose(v_after, v_ref, rtol=1e-6)
