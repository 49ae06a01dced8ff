"""The LCDM likelihood: profile bit order, design rows, brute-force enumeration, gradients, bad input."""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit

from bayesirt.data import simulate_lcdm as sim
from bayesirt.models import lcdm


def test_profile_bit_order_is_little_endian():
    # index c = sum_a z_a 2^a: attribute 1 is the least significant bit
    p = lcdm.profiles(2)
    assert p.tolist() == [[0, 0], [1, 0], [0, 1], [1, 1]]
    assert lcdm.profile_label(1, 2) == "10"  # attribute 1 mastered, attribute 2 not
    assert lcdm.profile_label(2, 2) == "01"
    assert lcdm.profile_index([[1, 0], [0, 1], [1, 1]]).tolist() == [1, 2, 3]
    assert lcdm.profile_index(lcdm.profiles(4)).tolist() == list(range(16))
    assert lcdm.profiles(3)[4].tolist() == [0, 0, 1]


def test_bit_order_and_design_agree_with_the_simulator():
    for a in (1, 2, 3):
        assert np.array_equal(lcdm.profiles(a), sim.profiles(a))
    rm, truth, q = sim.simulate_lcdm(5, n_persons=50, n_attributes=3, n_items=8)
    des = lcdm.design(q)
    for j in range(q.shape[0]):
        k = des.n_features[j]
        assert np.array_equal(des.delta[j, :, :k], sim.design_matrix(q[j], 3))
        assert des.names[j] == [sim.feature_name(f) for f in sim.item_features(q[j])]
        assert np.all(des.delta[j, :, k:] == 0) and des.feature_mask[j].sum() == k
    mastery = truth[truth.parameter == "mastery"].pivot(index="person", columns="category", values="value")
    profile = truth[truth.parameter == "profile"].value.to_numpy().astype(int)
    assert np.array_equal(lcdm.profile_index(mastery.to_numpy()), profile)


def test_seed_design_rows():
    # item measuring both attributes: intercept, a1, a2, a1:a2 against profiles 00, 10, 01, 11
    des = lcdm.design(np.array([[1, 1], [0, 1]]))
    assert des.delta[0].tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]]
    assert des.delta[1].tolist() == [[1, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 0, 0]]
    assert des.names == [["intercept", "a1", "a2", "a1:a2"], ["intercept", "a2"]]


def _problem(seed=0, n=7, a=3, j=5, missing=0.3):
    rng = np.random.default_rng(seed)
    q = np.zeros((j, a), int)
    for i in range(j):
        q[i, rng.choice(a, size=rng.integers(1, a + 1), replace=False)] = 1
    q[:a, :] = np.eye(a, dtype=int)  # every attribute measured
    des = lcdm.design(q)
    beta = rng.normal(size=des.feature_mask.shape) * des.feature_mask
    y = rng.integers(0, 2, size=(n, j))
    y[rng.uniform(size=y.shape) < missing] = -1
    log_pi = np.log(rng.dirichlet(np.ones(2**a)))
    return q, des, beta, y, log_pi


def test_likelihood_matches_brute_force_enumeration():
    q, des, beta, y, log_pi = _problem()
    n, j = y.shape
    prof = lcdm.profiles(q.shape[1])
    brute = np.zeros((n, len(prof)))
    for i, l in itertools.product(range(n), range(len(prof))):  # noqa: E741  (l: the attribute profile, as in the LCDM papers)
        for jj in range(j):
            if y[i, jj] < 0:
                continue
            feats = sim.item_features(q[jj])
            eta = sum(beta[jj, f] * (np.prod(prof[l, list(ft)]) if ft else 1.0) for f, ft in enumerate(feats))
            p = expit(eta)
            brute[i, l] += np.log(p if y[i, jj] == 1 else 1 - p)
    with jax.enable_x64(True):
        y_obs, n_obs = lcdm.observed_counts(y)
        got = lcdm.profile_loglik(
            jnp.asarray(beta), jnp.asarray(des.delta), y_obs.astype(jnp.float64), n_obs.astype(jnp.float64)
        )
        np.testing.assert_allclose(got, brute, rtol=1e-10, atol=1e-10)
        marg = lcdm.marginal_loglik(
            jnp.asarray(beta),
            jnp.asarray(log_pi),
            jnp.asarray(des.delta),
            y_obs.astype(jnp.float64),
            n_obs.astype(jnp.float64),
        )
        np.testing.assert_allclose(marg, np.log(np.exp(brute + log_pi).sum(1)), rtol=1e-10)
        post = np.exp(
            lcdm.posterior_profiles(
                jnp.asarray(beta),
                jnp.asarray(log_pi),
                jnp.asarray(des.delta),
                y_obs.astype(jnp.float64),
                n_obs.astype(jnp.float64),
            )
        )
        expected = np.exp(brute + log_pi)
        np.testing.assert_allclose(post, expected / expected.sum(1, keepdims=True), rtol=1e-10)


def test_missing_cells_contribute_nothing():
    q, des, beta, y, log_pi = _problem(missing=0.0)
    y_obs, n_obs = lcdm.observed_counts(y)
    full = lcdm.profile_loglik(beta, des.delta, y_obs, n_obs)
    y2 = y.copy()
    y2[:, 0] = -1
    dropped = lcdm.profile_loglik(beta[1:], des.delta[1:], *lcdm.observed_counts(y[:, 1:]))
    np.testing.assert_allclose(lcdm.profile_loglik(beta, des.delta, *lcdm.observed_counts(y2)), dropped, rtol=1e-6)
    assert not np.allclose(full, dropped)


def test_log_space_survives_extreme_logits():
    des = lcdm.design(np.array([[1]]))
    beta = np.array([[-200.0, 400.0]])  # probabilities 0 and 1 to double precision
    y = np.array([[1], [0]])
    ll = lcdm.marginal_loglik(beta, np.log([0.5, 0.5]), des.delta, *lcdm.observed_counts(y))
    assert np.all(np.isfinite(ll))
    np.testing.assert_allclose(ll, np.log(0.5), rtol=1e-5)


def test_marginal_gradient_matches_finite_differences():
    q, des, beta, y, log_pi = _problem(seed=3)
    with jax.enable_x64(True):
        y_obs, n_obs = (a.astype(jnp.float64) for a in lcdm.observed_counts(y))
        delta = jnp.asarray(des.delta)

        def f(b, lp):
            return lcdm.marginal_loglik(b, jax.nn.log_softmax(lp), delta, y_obs, n_obs).sum()

        gb, gl = jax.grad(f, argnums=(0, 1))(jnp.asarray(beta), jnp.asarray(log_pi))
        h = 1e-6
        for jj, k in [(0, 0), (0, 1), (3, 1), (4, 0)]:
            e = np.zeros_like(beta)
            e[jj, k] = h
            fd = (f(beta + e, log_pi) - f(beta - e, log_pi)) / (2 * h)
            np.testing.assert_allclose(gb[jj, k], fd, rtol=1e-6, atol=1e-8)
        for l in (0, 5):  # noqa: E741  (l: the attribute profile, as in the LCDM papers)
            e = np.zeros_like(log_pi)
            e[l] = h
            fd = (f(beta, log_pi + e) - f(beta, log_pi - e)) / (2 * h)
            np.testing.assert_allclose(gl[l], fd, rtol=1e-6, atol=1e-8)


def test_priors_match_scipy():
    from scipy import stats

    np.testing.assert_allclose(lcdm.log_inv_gamma(2.0, 3.0, 0.5), stats.invgamma(3.0, scale=0.5).logpdf(2.0), rtol=1e-5)
    pi = np.array([0.2, 0.3, 0.5])
    np.testing.assert_allclose(
        lcdm.log_dirichlet(jnp.log(pi), jnp.array([1.5, 2.0, 0.7])),
        stats.dirichlet([1.5, 2.0, 0.7]).logpdf(pi),
        rtol=1e-5,
    )
    b = np.array([[0.3, -1.0, 0.0]])
    fm = np.array([[1.0, 1.0, 0.0]])
    np.testing.assert_allclose(
        lcdm.log_normal_beta(b, 2.0, fm), stats.norm(0, np.sqrt(2.0)).logpdf(b[0, :2]).sum(), rtol=1e-5
    )


@pytest.mark.parametrize(
    "q, message",
    [
        (np.array([[1, 0], [0, 0], [1, 1]]), "item 2 .* measures no attribute"),
        (np.array([[1, 0], [1, 0], [1, 0]]), "attribute 2 .* is measured by no item"),
        (np.array([[1, 0], [0, 1]]), "has 2 rows but the responses have 3 items"),
        (np.array([[1, 2], [0, 1], [1, 1]]), "entries must be 0 or 1"),
        (np.ones((3, 17), int), "17 attributes .* at most 16"),
    ],
)
def test_bad_q_matrix(q, message):
    with pytest.raises(ValueError, match=message):
        lcdm.check_q_matrix(q, n_items=3)


def test_zero_row_allowed_on_request():
    q = lcdm.check_q_matrix(np.array([[1, 0], [0, 0], [0, 1]]), 3, allow_zero_rows=True)
    assert lcdm.design(q).names[1] == ["intercept"]


def test_bad_responses_and_size():
    with pytest.raises(ValueError, match=r"item 2 \(column 1\) holds 2 at person 1"):
        lcdm.check_responses(np.array([[0, 1], [1, 2]]))
    with pytest.raises(ValueError, match="exceed the limit"):
        lcdm.check_size(10**6, 16)
    lcdm.check_size(10**5, 4)


def test_monotone_beta_is_monotone_with_the_right_jacobian():
    q = np.array([[1, 0], [0, 1], [1, 1], [1, 1]])
    des = lcdm.design(q)
    lcdm.check_monotone_design(des)
    order = jnp.asarray(des.order)
    u = jax.random.normal(jax.random.PRNGKey(0), (50,) + des.order.shape) * 3
    beta, _ = lcdm.monotone_beta(u, order)
    eta = np.asarray(lcdm.item_logits(beta * des.feature_mask, jnp.asarray(des.delta)))  # (50, J, L)
    prof = lcdm.profiles(2)
    for lo, hi in [(0, 1), (0, 2), (1, 3), (2, 3)]:  # profile hi masters one attribute more than lo
        assert set(np.flatnonzero(prof[hi] - prof[lo])) and np.all(eta[..., hi] >= eta[..., lo] - 1e-5)
    # log|det| of the map restricted to each item's real features, against autodiff
    with jax.enable_x64(True):
        u1 = jnp.asarray(np.asarray(u[0]), jnp.float64)
        for j in range(4):
            k = des.n_features[j]
            f = lambda x: lcdm.monotone_beta(u1.at[j, :k].set(x), order)[0][j, :k]  # noqa: B023  (used within this iteration only)
            _, det = np.linalg.slogdet(np.asarray(jax.jacfwd(f)(u1[j, :k])))
            lj = float(jnp.sum(jnp.where(order[j] >= 1, jax.nn.log_sigmoid(u1[j]), 0.0)))
            np.testing.assert_allclose(det, lj, rtol=1e-8)


def test_monotone_refuses_items_with_three_attributes():
    with pytest.raises(ValueError, match="item 1 measures 3 attributes"):
        lcdm.check_monotone_design(lcdm.design(np.array([[1, 1, 1], [1, 0, 0]])))


def test_monotone_u_inverts_monotone_beta():
    des = lcdm.design(np.array([[1, 0], [0, 1], [1, 1], [1, 1]]))
    order = np.asarray(des.order)
    u = np.asarray(jax.random.normal(jax.random.PRNGKey(1), des.order.shape) * 2) * des.feature_mask
    beta = np.asarray(lcdm.monotone_beta(jnp.asarray(u, jnp.float32), jnp.asarray(order))[0]) * des.feature_mask
    np.testing.assert_allclose(lcdm.monotone_u(beta, order) * des.feature_mask, u, atol=1e-4)
    # coefficients outside the cone are moved just inside it
    back = lcdm.monotone_beta(jnp.asarray(lcdm.monotone_u(np.array([[-1.0, -0.5, 0, 0]]), order[:1])), order[:1])[0]
    np.testing.assert_allclose(back, [[-1.0, 1e-6, 0, 0]], atol=1e-6)
