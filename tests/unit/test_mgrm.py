"""Multidimensional GRM (models/mgrm.py) and its simulator (data/simulate_mgrm.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from bayesirt import tables
from bayesirt.data import simulate_mgrm as sm
from bayesirt.models import grm, mgrm


def small_structure(positive=True, correlated=True):
    q = mgrm.simple_structure_q([0, 0, 1, 1, 0], 2)
    return mgrm.structure([3, 4, 2, 4, 3], 2, q, positive_loadings=positive, correlated=correlated)


def brute_force_loglik(y, z, lam, cuts, ncat):
    """numpy float64: sum over observed items of log P(Y = y | z) from cumulative sigmoids."""
    out = 0.0
    for j, yj in enumerate(y):
        if yj < 0:
            continue
        s = z @ lam[j]
        upper = [1.0] + [1 / (1 + np.exp(-(s - c))) for c in cuts[j, : ncat[j] - 1]] + [0.0]
        out += np.log(upper[yj] - upper[yj + 1])
    return out


def test_log_likelihood_matches_brute_force_with_missing_cells():
    st = small_structure()
    params = mgrm.init_params(jax.random.key(0), st)
    params["loadings_raw"] = params["loadings_raw"] + jnp.linspace(-1, 1, 10).reshape(5, 2)
    y = np.array([[0, 3, 1, -1, 2], [2, 0, -1, 1, 0], [-1, -1, -1, -1, -1]])
    z = np.array([[0.3, -1.2], [1.5, 0.4], [0.0, 0.0]], np.float32)
    got = np.asarray(mgrm.log_likelihood(dict(params, ability=jnp.asarray(z)), jnp.asarray(y), st))
    lam = np.asarray(mgrm.loadings(params, st), np.float64)
    cuts = np.asarray(mgrm.cuts(params, st), np.float64)
    want = [brute_force_loglik(y[i], z[i].astype(np.float64), lam, cuts, np.asarray(st.n_categories)) for i in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert got[2] == 0.0  # an all-missing person contributes nothing


def test_constraints_hold_for_extreme_raw_values():
    st = small_structure()
    params = mgrm.init_params(jax.random.key(1), st)
    params = jax.tree.map(
        lambda a: a * 0 + jnp.asarray(np.random.default_rng(0).normal(0, 20, a.shape), a.dtype), params
    )
    lam = np.asarray(mgrm.loadings(params, st))
    assert (lam[np.asarray(st.loading_mask) > 0] >= 0).all()
    assert (lam[np.asarray(st.loading_mask) == 0] == 0).all()
    assert (np.diff(np.asarray(mgrm.cuts(params, st)), axis=1) >= 0).all()
    corr = np.asarray(mgrm.factor_corr(params, st))
    np.testing.assert_allclose(np.diag(corr), 1.0, atol=1e-5)
    assert np.linalg.eigvalsh(corr).min() > -1e-6


def test_log_prior_is_correlated_normal():
    st = small_structure()
    corr = np.array([[1.0, 0.6], [0.6, 1.0]])
    params = mgrm.params_from_natural(st, np.ones((5, 2)), np.tile([-1.0, 0.0, 1.0], (5, 1)), corr)
    np.testing.assert_allclose(np.asarray(mgrm.factor_corr(params, st)), corr, atol=1e-5)
    z = np.random.default_rng(1).normal(size=(7, 2))
    got = np.asarray(mgrm.log_prior(dict(params, ability=jnp.asarray(z, jnp.float32)), st))
    np.testing.assert_allclose(got, multivariate_normal(np.zeros(2), corr).logpdf(z), rtol=1e-5)
    st_id = small_structure(correlated=False)
    got = np.asarray(mgrm.log_prior({"ability": jnp.asarray(z, jnp.float32)}, st_id))
    np.testing.assert_allclose(got, multivariate_normal(np.zeros(2), np.eye(2)).logpdf(z), rtol=1e-5)


def test_params_from_natural_round_trip():
    st = small_structure()
    lam = np.array([[0.5, 0], [1.2, 0], [0, 0.8], [0, 2.0], [0.3, 0]])
    cuts = np.array([[-1, 0.5, 9], [-2, -1, 0.3], [0.1, 5, 6], [-0.5, 0, 0.5], [0, 1, 2]])
    p = mgrm.params_from_natural(st, lam, cuts, np.array([[1, -0.3], [-0.3, 1]]))
    np.testing.assert_allclose(np.asarray(mgrm.loadings(p, st)), lam, atol=1e-5)
    np.testing.assert_allclose(np.asarray(mgrm.cuts(p, st)), cuts, atol=1e-5)
    with pytest.raises(ValueError, match="strictly increasing"):
        mgrm.params_from_natural(st, lam, cuts[:, ::-1])


def test_gradient_matches_finite_differences():
    st = small_structure()
    y = jnp.asarray([[0, 3, 1, -1, 2], [2, 0, 1, 1, 0]])
    with jax.enable_x64(True):
        params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), mgrm.init_params(jax.random.key(2), st))
        params["corr_raw"] = jnp.asarray([0.4])
        z = jnp.asarray([[0.3, -1.2], [1.5, 0.4]], jnp.float64)
        f = lambda p: mgrm.log_joint(dict(p, ability=z), y, st).sum()
        grads = jax.grad(f)(params)
        h = 1e-6
        for name in params:
            flat = np.asarray(params[name]).ravel()
            for k in range(flat.size):
                up, dn = flat.copy(), flat.copy()
                up[k] += h
                dn[k] -= h
                fu = f({**params, name: jnp.asarray(up.reshape(params[name].shape))})
                fd = f({**params, name: jnp.asarray(dn.reshape(params[name].shape))})
                np.testing.assert_allclose(
                    np.asarray(grads[name]).ravel()[k],
                    (fu - fd) / (2 * h),
                    rtol=1e-5,
                    atol=1e-7,
                    err_msg=f"{name}[{k}]",
                )


def test_structure_rejects_bad_input():
    with pytest.raises(ValueError, match="q_matrix has shape"):
        mgrm.structure([3, 3], 2, np.ones((3, 2)))
    with pytest.raises(ValueError, match="loads on no factor"):
        mgrm.structure([3, 3], 2, np.array([[1, 0], [0, 0]]))
    with pytest.raises(ValueError, match="n_categories"):
        mgrm.structure([1, 3], 1)


# ----------------------------------------------------------------------------- simulator


def test_lkj_draws_are_correlation_matrices():
    rng = np.random.default_rng(0)
    for dim in (1, 2, 5):
        c = sm.lkj_corr(rng, dim)
        np.testing.assert_allclose(np.diag(c), 1.0)
        np.testing.assert_allclose(c, c.T)
        assert np.linalg.eigvalsh(c).min() > 0


def test_lkj_marginal_matches_theory():
    # for LKJ(eta) in dimension d, each correlation is 2 Beta(b, b) - 1 with b = eta - 1 + d/2,
    # so its variance is 1 / (2 b + 1); seed 0, 4000 draws, tolerance 10%
    rng = np.random.default_rng(0)
    d, eta = 4, 1.0
    r = np.array([sm.lkj_corr(rng, d, eta)[3, 0] for _ in range(4000)])
    b = eta - 1 + d / 2
    assert abs(r.var() - 1 / (2 * b + 1)) < 0.1 / (2 * b + 1)
    assert abs(r.mean()) < 0.03


def test_ipip_preset_shape_and_determinism():
    rm, truth = sm.from_preset("ipip", seed=5, n_persons=300)
    assert rm.responses.shape == (300, 50)
    assert set(np.unique(rm.responses)) <= set(range(5))
    assert rm.scales == ["EXT", "EST", "AGR", "CSN", "OPN"]
    q = sm.q_matrix(rm)
    assert q.shape == (50, 5) and (q.sum(0) == 10).all() and (q.sum(1) == 1).all()
    ints = truth[truth.parameter == "intercept"].value.to_numpy().reshape(50, 4)
    assert (np.diff(ints, axis=1) < 0).all()  # alpha decreasing = cuts strictly increasing
    lam = truth[truth.parameter == "loading"].value.to_numpy().reshape(50, 5)
    assert ((lam > 0) == (q > 0)).all()
    rm2, truth2 = sm.from_preset("ipip", seed=5, n_persons=300)
    np.testing.assert_array_equal(rm.responses, rm2.responses)
    assert truth.equals(truth2)


def test_simulated_responses_follow_the_model():
    # category frequencies of one item against the model's expected frequencies, seed 11,
    # 20,000 persons: |observed - expected| < 0.015
    rm, truth = sm.simulate_mgrm(11, 20000, n_items=6, n_categories=4, n_factors=2)
    st = mgrm.structure(rm.n_categories, 2, sm.q_matrix(rm), positive_loadings=True)
    p = mgrm.truth_params(st, truth)
    z = truth[truth.parameter == "ability"].value.to_numpy().reshape(20000, 2)
    score = jnp.asarray(z, jnp.float32) @ mgrm.loadings(p, st).T
    probs = np.exp(np.asarray(grm.category_log_probs(score, mgrm.cuts(p, st), st.n_categories)))
    expected = probs[:, 0, :].mean(0)
    observed = np.bincount(rm.responses[:, 0], minlength=4) / 20000
    np.testing.assert_allclose(observed, expected, atol=0.015)


def test_mixture_latent_is_standardised_and_trimodal():
    rm, truth = sm.from_preset("mixture_p1", seed=3, n_persons=20000)
    z = truth[truth.parameter == "ability"].value.to_numpy()
    assert abs(z.var() - 1.0) < 0.05 and abs(z.mean()) < 0.03
    scale = rm.attrs["latent_scale_divisor"]
    np.testing.assert_allclose(scale, np.sqrt(0.25 + 0.8 * 2.25))
    # 20% of the mass near the middle mode, 40% near each outer mode
    near_mid = np.mean(np.abs(z) < 0.5 / scale)
    assert 0.12 < near_mid < 0.22


def test_complex_structure_has_cross_loadings():
    rm, truth = sm.simulate_mgrm(2, 50, n_items=20, n_categories=3, n_factors=4, structure="complex")
    q = sm.q_matrix(rm)
    assert (q.sum(1) >= 1).all() and (q.sum(1) > 1).any()


def test_simulator_rejects_bad_input():
    with pytest.raises(ValueError, match="structure"):
        sm.simulate_mgrm(0, 10, 5, 3, 1, structure="weird")
    with pytest.raises(ValueError, match="n_factors"):
        sm.simulate_mgrm(0, 10, 5, 3, 6)
    with pytest.raises(ValueError, match="unknown simulation preset"):
        sm.from_preset("nope", 0, 10)


def test_estimates_table_lines_up_with_the_truth_table():
    rm, truth = sm.from_preset("bench_p4", 1, 50)
    assert rm.items[0].name == "F1_1"
    st = mgrm.structure(rm.n_categories, 4, sm.q_matrix(rm), positive_loadings=True)
    est = tables.mgrm_table(
        mgrm.natural_params(mgrm.truth_params(st, truth), st),
        item_names=[it.name for it in rm.items],
        factor_names=rm.attrs["factor_names"],
        value_column="mean",
    )
    keys = ["parameter", "item", "item_name", "person", "factor", "factor_name", "factor2", "category"]
    merged = tables.attach_truth(est, truth, keys)
    assert len(merged) == len(est) and merged["true"].notna().all()
    np.testing.assert_allclose(merged["mean"], merged["true"], atol=1e-5)
