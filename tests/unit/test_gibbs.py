"""Gibbs sampler for the 2PNO model and the two-component mixture: each full conditional on its
own (other blocks fixed at known values), checked against closed forms computed here in numpy.

Monte Carlo checks use fixed keys and a tolerance of 5 Monte Carlo standard errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import ndtri as sp_ndtri
from scipy.stats import truncnorm

from bayesirt.inference.samplers import gibbs, gibbs_expansion, gibbs_mixture, gibbs_sweep, truncnormal
from bayesirt.models.twopno import Priors

N_DRAWS = 200_000


def _check_moments(x, mean, var, n_se=5.0):
    x = np.asarray(x, np.float64)
    assert np.isfinite(x).all()
    n = x.shape[0]
    np.testing.assert_allclose(x.mean(0), mean, atol=n_se * np.sqrt(np.max(var) / n) + 1e-7)
    # sd of a sample variance ~ var * sqrt(2 / n) (normal-like); truncated tails are lighter
    np.testing.assert_allclose(x.var(0), var, rtol=n_se * np.sqrt(2.0 / n) + 1e-5)


def test_ndtri_f32_matches_scipy():
    p = np.concatenate(
        [np.logspace(-37, -1, 5000), np.linspace(0.01, 0.99, 5000), 1 - np.logspace(-7, -1, 500)]
    ).astype(np.float32)
    got = np.asarray(truncnormal.ndtri_f32(jnp.asarray(p)), np.float64)
    want = sp_ndtri(p.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("c", [-30.0, -5.0, 0.0, 2.0, 5.0, 9.5, 10.0, 10.5, 30.0, 200.0])
def test_normal_above_moments(c):
    x = truncnormal.normal_above(jax.random.key(7), jnp.full((N_DRAWS,), c, jnp.float32))
    mean, var = truncnormal.truncated_normal_moments(c)
    x = np.asarray(x, np.float64)
    assert np.all(x >= np.float32(c))
    _check_moments(x, mean, var)


@pytest.mark.parametrize("eta", [0.0, 5.0, 10.0, 30.0, -30.0])
@pytest.mark.parametrize("y", [0, 1])
def test_z_conditional_moments_far_into_the_tails(eta, y):
    """Z | y, eta ~ N(eta, 1) truncated to the side of y: no NaN or inf, right mean and variance."""
    n = N_DRAWS
    yy = jnp.full((n, 1), y, jnp.int8)
    z = gibbs_sweep.draw_z(jax.random.key(3), yy, jnp.full((n,), 1.0), jnp.array([1.0]), jnp.array([1.0 - eta]))
    z = np.asarray(z[:, 0], np.float64)
    assert np.isfinite(z).all()
    assert np.all(z >= 0) if y == 1 else np.all(z <= 0)
    a, b = (-eta, np.inf) if y == 1 else (-np.inf, -eta)
    mean, var = truncnorm.stats(a, b, loc=eta, moments="mv")
    _check_moments(z, float(mean), float(var))


def test_z_of_missing_cells_untruncated_or_zero():
    n = N_DRAWS
    y = jnp.full((n, 1), -1, jnp.int8)
    args = (jnp.full((n,), 2.0), jnp.array([1.5]), jnp.array([1.0]))  # eta = 2
    z = gibbs_sweep.draw_z(jax.random.key(4), y, *args, missing="augment")
    _check_moments(np.asarray(z[:, 0]), 2.0, 1.0)
    z0 = gibbs_sweep.draw_z(jax.random.key(4), y, *args, missing="omit")
    assert np.all(np.asarray(z0) == 0.0)


def test_truncated_normal_never_below_bound():
    mean = jnp.array([-40.0, -3.0, 0.0, 3.0])
    a = truncnormal.truncated_normal(jax.random.key(0), jnp.tile(mean, 1000), jnp.full(4000, 0.5), jnp.zeros(4000))
    assert np.all(np.asarray(a) > 0) and np.isfinite(np.asarray(a)).all()


def _fixed_blocks(seed=0, n=40, j=6, missing_frac=0.3):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=(n, j)).astype(np.int8)
    y[rng.uniform(size=(n, j)) < missing_frac] = -1
    z = rng.normal(size=(n, j)).astype(np.float32)
    theta = rng.normal(size=n).astype(np.float32)
    a = rng.uniform(0.5, 2.0, j).astype(np.float32)
    d = rng.normal(size=j).astype(np.float32)
    return y, z, theta, a, d


@pytest.mark.parametrize("missing", ["augment", "omit"])
def test_theta_conditional_draws_match_closed_form(missing):
    y, z, theta, a, d = _fixed_blocks()
    pri = Priors(ability_mean=0.3, ability_var=2.0)
    obs = (y >= 0) if missing == "omit" else np.ones_like(y, bool)
    zz = np.where(obs, z, 0.0)
    # closed form, written out per person: 1/v = 1/s2 + sum_j a_j^2, m = v (mu/s2 + sum a_j (Z + d_j))
    prec = 1 / 2.0 + (obs * a**2).sum(1)
    mean = (0.3 / 2.0 + (obs * a * (zz + d)).sum(1)) / prec
    draws = jax.vmap(
        lambda k: gibbs_sweep.draw_theta(
            k, jnp.asarray(zz), jnp.asarray(y), jnp.asarray(a), jnp.asarray(d), pri, missing
        )
    )(jax.random.split(jax.random.key(1), 20_000))
    _check_moments(np.asarray(draws), mean, 1 / prec)


def test_item_conditional_draws_match_closed_form_with_truncation():
    # few persons, so that the unrestricted conditional of a_j puts real mass below 0
    y, z, theta, _, _ = _fixed_blocks(seed=2, n=5, j=4, missing_frac=0.0)
    z[:, 0] -= 2 * theta  # pushes item 0's slope negative: truncation matters there
    pri = Priors(discrimination_mean=0.5, discrimination_var=1.5, difficulty_mean=-0.2, difficulty_var=2.0)
    x = np.stack([theta, -np.ones_like(theta)], 1).astype(np.float64)  # eta = X xi
    p_prior = np.diag([1 / 1.5, 1 / 2.0])
    p = p_prior + x.T @ x
    cov = np.linalg.inv(p)
    draws = jax.vmap(
        lambda k: jnp.stack(gibbs_sweep.draw_items(k, jnp.asarray(z), jnp.asarray(y), jnp.asarray(theta), pri))
    )(jax.random.split(jax.random.key(5), N_DRAWS))
    draws = np.asarray(draws, np.float64)  # (draws, 2, items)
    assert np.all(draws[:, 0] > 0)
    for j in range(4):
        b = p_prior @ np.array([0.5, -0.2]) + x.T @ z[:, j]
        m = cov @ b
        sa = np.sqrt(cov[0, 0])
        lo = -m[0] / sa
        ma, va = truncnorm.stats(lo, np.inf, loc=m[0], scale=sa, moments="mv")
        # d | a is the unrestricted Gaussian conditional: linear in a
        slope = cov[1, 0] / cov[0, 0]
        md = m[1] + slope * (ma - m[0])
        vd = cov[1, 1] - cov[1, 0] ** 2 / cov[0, 0] + slope**2 * va
        _check_moments(draws[:, :, j], np.array([ma, md]), np.array([va, vd]))
        cov_ad = np.cov(draws[:, 0, j], draws[:, 1, j])[0, 1]
        np.testing.assert_allclose(cov_ad, slope * va, atol=5 * np.sqrt(va * vd / N_DRAWS))


@pytest.mark.parametrize("missing", ["augment", "omit"])
def test_item_conditional_without_truncation_is_the_bivariate_normal(missing):
    y, z, theta, _, _ = _fixed_blocks(seed=3, n=300, j=3)
    pri = Priors()
    obs = (y >= 0) if missing == "omit" else np.ones_like(y, bool)
    zz = np.where(obs, z, 0.0)
    draws = jax.vmap(
        lambda k: jnp.stack(
            gibbs_sweep.draw_items(
                k, jnp.asarray(zz + 2 * theta[:, None] * obs), jnp.asarray(y), jnp.asarray(theta), pri, missing
            )
        )
    )(jax.random.split(jax.random.key(6), 50_000))
    draws = np.asarray(draws, np.float64)
    for j in range(3):
        o = obs[:, j]
        x = np.stack([theta[o], -np.ones(o.sum())], 1)
        p = np.eye(2) + x.T @ x
        cov = np.linalg.inv(p)
        m = cov @ (x.T @ (zz[o, j] + 2 * theta[o]))
        assert m[0] / np.sqrt(cov[0, 0]) > 8  # truncation at 0 is immaterial here
        _check_moments(draws[:, :, j], m, np.diag(cov))
        np.testing.assert_allclose(
            np.cov(draws[:, 0, j], draws[:, 1, j])[0, 1],
            cov[0, 1],
            atol=5 * np.sqrt(cov[0, 0] * cov[1, 1] / draws.shape[0]),
        )


def test_missing_as_untruncated_z_gives_the_same_theta_conditional_as_leaving_it_out():
    """With items fixed, alternating (missing Z | theta) and (theta | all Z) has as stationary
    law the 'omit' conditional of theta given the observed Z only. Many independent copies of
    one person (persons are independent given the items) run 60 sweeps from theta = 0."""
    rng = np.random.default_rng(11)
    j, copies = 8, 20_000
    a = rng.uniform(0.5, 2.0, j).astype(np.float32)
    d = rng.normal(size=j).astype(np.float32)
    row_y = np.array([1, 0, -1, 1, -1, -1, 0, 1], np.int8)
    row_z = rng.normal(size=j).astype(np.float32)
    pri = Priors()
    y = jnp.asarray(np.tile(row_y, (copies, 1)))
    z_obs = jnp.asarray(np.tile(np.where(row_y >= 0, row_z, 0.0), (copies, 1)))
    obs = np.asarray(y) >= 0

    def sweep(theta, key):
        k_z, k_t = jax.random.split(key)
        eta = theta[:, None] * a - d
        z_mis = eta + jax.random.normal(k_z, eta.shape)
        z = jnp.where(jnp.asarray(obs), z_obs, z_mis)
        return gibbs_sweep.draw_theta(k_t, z, y, jnp.asarray(a), jnp.asarray(d), pri, "augment"), None

    theta, _ = jax.lax.scan(sweep, jnp.zeros(copies), jax.random.split(jax.random.key(2), 60))
    mean, var = gibbs_sweep.theta_conditional(z_obs[:1], y[:1], jnp.asarray(a), jnp.asarray(d), pri, "omit")
    _check_moments(np.asarray(theta), float(mean[0]), float(var[0]))


def test_step_keeps_discriminations_positive_and_finite_with_missing_and_extremes():
    rng = np.random.default_rng(0)
    y = rng.integers(-1, 2, size=(50, 7)).astype(np.int8)
    y[:, 0] = 1  # an item everyone answered 1
    data = gibbs.make_data(y)
    state = gibbs.init_from(jax.random.key(0), data)
    # an absurd state: the tail sampler must take the cells predicted wrong by > 10 sd
    state = state._replace(a=state.a * 0 + 20.0, theta=jnp.where(jnp.arange(50) % 2 == 0, 3.0, -3.0))
    step = jax.jit(lambda k, s: gibbs_sweep.step(k, s, data.y, Priors(), "augment"))
    for k in jax.random.split(jax.random.key(1), 5):
        state = step(k, state)
        assert all(np.isfinite(np.asarray(v)).all() for v in state)
        assert np.all(np.asarray(state.a) > 0)
    z, yy = np.asarray(state.z), np.asarray(y)
    assert np.all(z[yy == 1] >= 0) and np.all(z[yy == 0] <= 0)


def test_kernel_validates_and_records():
    y = np.array([[0, 1, 1], [1, 2, 0]])
    with pytest.raises(ValueError, match="item 'i2' is not binary"):
        gibbs.kernel(y, item_names=["i1", "i2", "i3"])
    with pytest.raises(ValueError, match="missing='drop'"):
        gibbs.kernel(np.zeros((2, 2), int), missing="drop")
    with pytest.warns(UserWarning, match="item 'i1' was answered 1 by every one"):
        k = gibbs.kernel(np.array([[1, 0, 1], [1, 1, 0]]), item_names=["i1", "i2", "i3"])
    assert k.dims["discrimination"] == ["item"] and "ability" in k.dims
    s = k.init_fn(jax.random.key(0), k.data)
    s = k.step_fn(jax.random.key(1), s, k.data)
    rec = k.record_fn(s)
    assert set(rec) == {"discrimination", "difficulty", "ability"}
    k2 = gibbs.kernel(np.array([[1, 0], [0, 1]]), abilities=False)
    assert set(k2.record_fn(s)) == {"discrimination", "difficulty"}


# ---------------------------------------------------------------- two-component mixture


def test_mixture_mu_conditional_matches_closed_form():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-6, 1, 30), rng.normal(6, 1, 40)]).astype(np.float32)
    pri = gibbs_mixture.MixturePriors(lam=1.0, nu=0.5, rho=0.1)
    state = gibbs_mixture.MixtureState(jnp.asarray((x > 0).astype(np.int32)), jnp.float32(0.5), jnp.array([-6.0, 6.0]))
    # z is redrawn inside step; check mu against the closed form given the z that step drew
    draws = jax.vmap(lambda k: gibbs_mixture.step(k, state, jnp.asarray(x), pri))(
        jax.random.split(jax.random.key(0), 5_000)
    )
    z = np.asarray(draws.z)
    assert np.all(z == (x > 0))  # the components are far apart: allocations are certain here
    m, v = gibbs_mixture.conditional_mu(x, z[0], pri)
    _check_moments(np.asarray(draws.mu), m, v)
    # pi | z ~ Beta(1 + n1, 1 + n0)
    n1 = z[0].sum()
    a, b = 1 + n1, 1 + (len(x) - n1)
    _check_moments(np.asarray(draws.pi), a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1)))


def test_mixture_allocation_probabilities():
    x = jnp.array([-1.0, 0.0, 0.5, 2.0])
    logit = gibbs_mixture.allocation_logit(x, 0.3, jnp.array([-1.0, 1.0]), 2.0)
    w1 = 0.3 * np.exp(-0.5 * 2 * (np.asarray(x) - 1) ** 2)
    w0 = 0.7 * np.exp(-0.5 * 2 * (np.asarray(x) + 1) ** 2)
    np.testing.assert_allclose(1 / (1 + np.exp(-np.asarray(logit))), w1 / (w0 + w1), rtol=1e-5)


def test_mixture_relabelling_orders_the_means():
    s = gibbs_mixture.MixtureState(jnp.array([0, 1, 1]), jnp.float32(0.2), jnp.array([5.0, 1.0]))
    r = gibbs_mixture.relabel(s)
    np.testing.assert_allclose(np.asarray(r.mu), [1.0, 5.0])
    np.testing.assert_allclose(float(r.pi), 0.8)
    np.testing.assert_array_equal(np.asarray(r.z), [1, 0, 0])
    same = gibbs_mixture.relabel(r)
    np.testing.assert_allclose(np.asarray(same.mu), [1.0, 5.0])


def test_mixture_bad_input():
    with pytest.raises(ValueError, match="mixture prior 'lam' must be positive"):
        gibbs_mixture.MixturePriors(lam=0.0)
    with pytest.raises(ValueError, match="non-finite value"):
        gibbs_mixture.kernel(np.array([1.0, np.nan, 2.0]))
    with pytest.warns(UserWarning, match="symmetrized Beta prior"):
        gibbs_mixture.kernel(np.array([1.0, 2.0, 3.0]), gibbs_mixture.MixturePriors(alpha=2.0, beta=1.0))


# ---------------------------------------------------------------- moves along the symmetries


def _moved_state(seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(-1, 2, size=(30, 5)).astype(np.int8)
    data = gibbs.make_data(y)
    state = gibbs.init_from(jax.random.key(seed), data)
    state = gibbs_sweep.step(jax.random.key(seed + 1), state, data.y, Priors(), "augment", expand=False)
    return y, data, state


@pytest.mark.parametrize("missing", ["augment", "omit"])
def test_symmetry_moves_keep_the_likelihood_and_constraints(missing):
    y, data, s = _moved_state()
    s = s._replace(z=gibbs_sweep.draw_z(jax.random.key(9), data.y, s.theta, s.a, s.d, missing))
    eta = s.theta[:, None] * s.a - s.d
    th, d = gibbs_expansion.shift_location(jax.random.key(1), s.theta, s.a, s.d, Priors())
    np.testing.assert_allclose(np.asarray(th[:, None] * s.a - d), np.asarray(eta), atol=1e-4)
    th2, a2 = gibbs_expansion.rescale(jax.random.key(2), s.theta, s.a, Priors(), step_size=0.3)
    np.testing.assert_allclose(np.asarray(th2[:, None] * a2 - s.d), np.asarray(eta), atol=1e-4)
    z3, a3, d3 = gibbs_expansion.expand_items(jax.random.key(3), s.z, data.y, s.theta, s.a, s.d, Priors(), missing)
    g = np.asarray(a3 / s.a)
    np.testing.assert_allclose(np.asarray(d3), np.asarray(s.d) * g, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(z3), np.asarray(s.z) * g, rtol=1e-5)
    assert np.all(np.sign(np.asarray(z3)) == np.sign(np.asarray(s.z))) and np.all(g > 0)


def test_location_move_draws_its_gaussian():
    _, _, s = _moved_state(1)
    pri = Priors(ability_mean=0.2, difficulty_var=2.0, difficulty_mean=-0.1)
    th = jax.vmap(lambda k: gibbs_expansion.shift_location(k, s.theta, s.a, s.d, pri)[0][0])(
        jax.random.split(jax.random.key(0), 50_000)
    )
    h = np.asarray(th, np.float64) - float(s.theta[0])
    theta, a, d = (np.asarray(v, np.float64) for v in (s.theta, s.a, s.d))
    prec = len(theta) / 1.0 + (a * a).sum() / 2.0
    mean = -((theta - 0.2).sum() + (a * (d + 0.1)).sum() / 2.0) / prec
    _check_moments(h, mean, 1 / prec)


def test_item_scale_move_draws_its_gamma():
    y, data, s = _moved_state(2)
    z = gibbs_sweep.draw_z(jax.random.key(9), data.y, s.theta, s.a, s.d, "augment")
    a3 = jax.vmap(lambda k: gibbs_expansion.expand_items(k, z, data.y, s.theta, s.a, s.d, Priors(), "augment")[1])(
        jax.random.split(jax.random.key(0), 50_000)
    )
    g2 = (np.asarray(a3, np.float64) / np.asarray(s.a, np.float64)) ** 2
    theta, a, d = (np.asarray(v, np.float64) for v in (s.theta, s.a, s.d))
    r = ((np.asarray(z) - (theta[:, None] * a - d)) ** 2).sum(0) + a**2 + d**2
    shape, rate = (len(theta) + 2) / 2, r / 2
    _check_moments(g2, shape / rate, shape / rate**2)


def test_scale_move_is_reversible_on_the_prior():
    """With no data the posterior is the prior; the scale move alone (which never looks at
    Z) must leave the prior of theta invariant: start from prior draws, apply it many times."""
    n, j, copies = 20, 3, 4000
    pri = Priors()
    keys = jax.random.split(jax.random.key(0), copies)
    theta0 = jax.vmap(lambda k: jax.random.normal(k, (n,)))(keys)
    a0 = jnp.abs(jax.vmap(lambda k: jax.random.normal(jax.random.fold_in(k, 1), (j,)))(keys))

    def run(k, th, a):
        def body(c, kk):
            return gibbs_expansion.rescale(kk, c[0], c[1], pri), None

        return jax.lax.scan(body, (th, a), jax.random.split(k, 30))[0]

    th, a = jax.vmap(run)(jax.random.split(jax.random.key(1), copies), theta0, a0)
    th, a = np.asarray(th), np.asarray(a)
    _check_moments(th.reshape(-1, 1)[:, 0], 0.0, 1.0, n_se=6)
    hn_var = 1 - 2 / np.pi
    _check_moments(a.ravel(), np.sqrt(2 / np.pi), hn_var, n_se=6)


def test_uniform_open_is_uniform_on_the_open_interval():
    u = np.asarray(truncnormal.uniform_open(jax.random.key(0), (1001, 7)), np.float64)  # odd count
    assert u.shape == (1001, 7) and u.min() > 0 and u.max() < 1
    _check_moments(u.ravel(), 0.5, 1 / 12)
    u2 = np.asarray(truncnormal.uniform_open(jax.random.key(1), (1001, 7)))
    assert not np.allclose(u, u2)
    np.testing.assert_array_equal(u, np.asarray(truncnormal.uniform_open(jax.random.key(0), (1001, 7))))
