"""Model checks with missing responses (evaluation.fit_checks) against brute force and simulation.

Every simulation below states its seed and sizes; item values are the generating ones, so no
parameter is estimated (that is why the null tests pass ``n_parameters=0``: the df of a
statistic at known item values subtract nothing).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit, logsumexp, ndtr
from scipy.stats import chi2

from bayesirt.evaluation import fit_checks as fc
from bayesirt.evaluation.fit_checks.grids import _twopno_probs


def simulate_2pl(seed, n_persons, a, d, guessing=None):
    """Binary responses P(Y = 1) = c + (1 - c) sigmoid(a theta - d), theta ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n_persons)
    p = expit(theta[:, None] * a[None, :] - d[None, :])
    if guessing is not None:
        p = guessing[None, :] + (1.0 - guessing[None, :]) * p
    return (rng.random(p.shape) < p).astype(np.int64), rng


def simulate_grm(seed, n_persons, a, cuts, n_categories, scale_index):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((n_persons, int(scale_index.max()) + 1))[:, scale_index]  # (N, I)
    real = np.arange(1, cuts.shape[1] + 1)[None, :] < n_categories[:, None]
    above = expit(a[None, :, None] * theta[..., None] - cuts[None]) * real[None]  # P(Y >= k)
    return (rng.random(theta.shape)[..., None] < above).sum(-1), rng


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
A10 = np.linspace(0.8, 2.0, 10)
D10 = np.linspace(-1.5, 1.5, 10)


def binary_grid(a, d):
    return fc.grm_grid(a, d[:, None], np.full(a.shape[0], 2))


def small_grm():
    """Six items on two scales, 3 or 4 categories."""
    a = np.array([1.2, 0.8, 1.5, 1.0, 2.0, 0.7])
    cuts = np.array(
        [
            [-1.0, 0.0, 1.0],
            [-0.5, 0.5, np.nan],
            [-1.5, -0.2, 0.8],
            [0.0, 1.0, np.nan],
            [-1.0, 1.0, 2.0],
            [-0.3, 0.4, 1.1],
        ]
    )
    n_cat = np.array([4, 3, 4, 3, 4, 4])
    scale = np.array([0, 0, 0, 1, 1, 1])
    return a, cuts, n_cat, scale


# ----------------------------------------------------------------------------------------------
# grids


def test_grm_grid_matches_the_model_module_and_sums_to_one(x64):
    from bayesirt.models.grm import category_log_probs

    a, cuts, n_cat, scale = small_grm()
    grid = fc.grm_grid(a, np.nan_to_num(cuts, nan=9.0), n_cat, scale, n_nodes=21)
    ref = np.exp(np.asarray(category_log_probs(grid.order[:, None] * a[None, :], np.nan_to_num(cuts, nan=9.0), n_cat)))
    np.testing.assert_allclose(grid.probs, ref, atol=1e-12)
    np.testing.assert_allclose(grid.probs.sum(-1), 1.0, atol=1e-12)
    assert logsumexp(grid.log_weights) == pytest.approx(0.0, abs=1e-12)
    # N(0, 1) moments from the Gauss-Hermite weights
    w = np.exp(grid.log_weights)
    assert w @ grid.order == pytest.approx(0.0, abs=1e-12) and w @ grid.order**2 == pytest.approx(1.0, abs=1e-10)


def test_twopno_grid_follows_the_model_sign_convention(x64):
    from bayesirt.models import twopno

    a, d = np.array([0.7, 1.5]), np.array([-0.4, 0.9])
    grid = fc.twopno_grid(a, d, n_nodes=11)
    eta = np.asarray(twopno.linear_predictor(grid.order, a, d))  # a theta - d
    np.testing.assert_allclose(
        np.log(grid.probs[..., 1]), np.asarray(twopno.cell_log_prob(1, eta, "probit")), atol=1e-12
    )
    np.testing.assert_allclose(grid.probs[..., 1], ndtr(grid.order[:, None] * a - d), atol=1e-14)


# ----------------------------------------------------------------------------------------------
# posteriors


def test_leave_one_out_predictive_equals_the_posterior_without_the_cell():
    a, cuts, n_cat, scale = small_grm()
    grid = fc.grm_grid(a, np.nan_to_num(cuts, nan=9.0), n_cat, scale, n_nodes=31)
    y, rng = simulate_grm(11, 40, a, np.nan_to_num(cuts, nan=9.0), n_cat, scale)  # seed 11
    y[rng.random(y.shape) < 0.25] = -1
    y[0] = [2, -1, 1, 0, -1, 3]
    loo = fc.leave_one_out_predictive(y, grid)
    post = fc.person_posteriors(y, grid)
    with np.errstate(divide="ignore"):  # categories beyond an item's K_j have probability 0
        logp = np.log(grid.probs)
    for n in range(6):
        for j in range(6):
            if y[n, j] < 0:
                assert np.isnan(loo[n, j]).all()
                continue
            others = [i for i in range(6) if i != j and y[n, i] >= 0 and scale[i] == scale[j]]
            lw = grid.log_weights + sum((logp[:, i, y[n, i]] for i in others), np.zeros(31))
            w = np.exp(lw - logsumexp(lw))
            np.testing.assert_allclose(loo[n, j], w @ grid.probs[:, j, :], atol=1e-12)
        # and the full posterior per scale
        for s in (0, 1):
            items = [i for i in range(6) if y[n, i] >= 0 and scale[i] == s]
            lw = grid.log_weights + sum((logp[:, i, y[n, i]] for i in items), np.zeros(31))
            np.testing.assert_allclose(post[n, s], lw - logsumexp(lw), atol=1e-10)


def test_lord_wingersky_equals_enumeration_of_patterns():
    a = np.array([1.0, 1.5, 0.7, 2.0, 1.2])
    cuts = np.array([[0.3, 9.0], [-0.5, 9.0], [1.0, 9.0], [0.0, 9.0], [-0.8, 0.9]])
    n_cat = np.array([2, 2, 2, 2, 3])  # four binary items and one with three categories
    grid = fc.grm_grid(a, cuts, n_cat, n_nodes=15)
    dist = fc.summed_score_distribution(grid)
    brute = np.zeros((15, int((n_cat - 1).sum()) + 1))
    for pattern in itertools.product(*(range(k) for k in n_cat)):
        brute[:, sum(pattern)] += np.prod([grid.probs[:, j, k] for j, k in enumerate(pattern)], axis=0)
    np.testing.assert_allclose(dist, brute, atol=1e-14)
    np.testing.assert_allclose(fc.summed_score_distribution(grid, [0, 4]).sum(1), 1.0, atol=1e-14)


# ----------------------------------------------------------------------------------------------
# item fit


def test_sx2_under_the_true_model_is_not_extreme_and_flags_guessing_items():
    # 2PL, I = 10, N = 2000, seed 2024, at the generating item values
    y, _ = simulate_2pl(2024, 2000, A10, D10)
    fit = fc.sx2_complete(y, binary_grid(A10, D10), n_parameters=0)
    assert list(fit.columns) == ["item", "n_observed", "statistic", "df", "p_value", "groups", "pooled", "flagged"]
    assert (fit.p_value < 0.05).sum() < 3
    assert (fit.groups >= 5).all() and (fit.df == fit.groups).all()  # binary: df = G - m with m = 0
    # items 6, 7, 8 from a 3PL with guessing 0.25 (seed 2025), checked against the 2PL without
    # it: the missing asymptote misfits those items; the others inherit some misfit through
    # the summed score, so the check is on the relative size
    guess = np.zeros(10)
    guess[[6, 7, 8]] = 0.25
    y, _ = simulate_2pl(2025, 2000, A10, D10, guessing=guess)
    fit = fc.sx2_complete(y, binary_grid(A10, D10), n_parameters=0)
    bad = fit.statistic[[6, 7, 8]]
    assert fit.flagged[[6, 7, 8]].all()
    assert bad.min() > 3 * np.median(fit.statistic.drop([6, 7, 8]))


def test_sx2_equals_the_textbook_formula_by_enumeration():
    # five binary items, N = 3000, seed 7: every score group 1..4 is large, so nothing pools
    a, d = np.array([1.0, 1.5, 0.7, 2.0, 1.2]), np.array([0.3, -0.5, 1.0, 0.0, -0.8])
    y, _ = simulate_2pl(7, 3000, a, d)
    grid = binary_grid(a, d)
    fit = fc.sx2_complete(y, grid, n_parameters=2)
    assert (fit.pooled == 0).all() and (fit.groups == 4).all() and (fit.df == 2).all()
    w = np.exp(grid.log_weights)
    patterns = np.array(list(itertools.product((0, 1), repeat=5)))
    p_pattern = (
        np.prod(np.where(patterns[:, None, :] == 1, grid.probs[None, :, :, 1], grid.probs[None, :, :, 0]), -1) @ w
    )
    score = y.sum(1)
    for j in range(5):
        stat = 0.0
        for s in range(1, 5):
            at_s = patterns.sum(1) == s
            e = p_pattern[at_s & (patterns[:, j] == 1)].sum() / p_pattern[at_s].sum()  # P(Y_j = 1 | S = s)
            n_s = (score == s).sum()
            o = y[score == s, j].mean()
            stat += n_s * (o - e) ** 2 / (e * (1 - e))
        assert fit.statistic[j] == pytest.approx(stat, rel=1e-10)
        assert fit.p_value[j] == pytest.approx(chi2.sf(stat, 2), rel=1e-10)


def test_sx2_on_polytomous_items_pools_the_end_scores_and_counts_df_per_category():
    a, cuts, n_cat, scale = small_grm()
    cuts = np.nan_to_num(cuts, nan=9.0)
    one = np.zeros(6, dtype=np.int64)
    y, _ = simulate_grm(5, 1500, a, cuts, n_cat, one)  # seed 5, N = 1500, one scale
    fit = fc.sx2_complete(y, fc.grm_grid(a, cuts, n_cat, one), n_parameters=0)
    assert (fit.df == fit.groups * (n_cat - 1)).all()
    assert (fit.pooled > 0).all()  # at least the structurally incomplete end scores pool
    assert (fit.p_value > 1e-3).all()


def test_sx2_complete_refuses_missing_data_in_one_line():
    y, _ = simulate_2pl(0, 50, A10, D10)
    y[3, 4] = y[7, 1] = -1
    with pytest.raises(ValueError, match=r"^sx2_complete needs complete data: 2 of 500 cells are missing") as err:
        fc.sx2_complete(y, binary_grid(A10, D10))
    assert "\n" not in str(err.value)
    a, cuts, n_cat, scale = small_grm()
    with pytest.raises(ValueError, match="single scale"):
        fc.sx2_complete(np.zeros((5, 6), dtype=int), fc.grm_grid(a, np.nan_to_num(cuts, nan=9.0), n_cat, scale))


def test_item_fit_with_missing_responses():
    # 2PL, I = 10, N = 2500, 20% MCAR; seeds 31 (true model) and 32 (3PL items 6-8)
    y, rng = simulate_2pl(31, 2500, A10, D10)
    y[rng.random(y.shape) < 0.2] = -1
    fit = fc.item_fit(y, binary_grid(A10, D10), n_parameters=0)
    assert (fit.n_observed == (y >= 0).sum(0)).all()
    assert fit.flagged.sum() < 3
    assert (fit.df == fit.groups).all()
    guess = np.zeros(10)
    guess[[6, 7, 8]] = 0.25
    y, rng = simulate_2pl(32, 2500, A10, D10, guessing=guess)
    y[rng.random(y.shape) < 0.2] = -1
    fit = fc.item_fit(y, binary_grid(A10, D10), n_parameters=0)
    assert fit.flagged[[6, 7, 8]].all()
    assert fit.statistic[[6, 7, 8]].min() > 3 * np.median(fit.statistic.drop([6, 7, 8]))


def test_observed_expected_table_adds_up():
    y, rng = simulate_2pl(41, 1000, A10, D10)  # seed 41, N = 1000, 30% MCAR
    y[rng.random(y.shape) < 0.3] = -1
    grid = binary_grid(A10, D10)
    table = fc.observed_expected(y, grid, item=3, n_groups=8)
    assert table.group.nunique() == 8 and set(table.category) == {0, 1}
    assert table.observed.sum() == (y[:, 3] >= 0).sum()
    # the predictives are those of the completed data (seed 0), read at the real answers of item 3
    completed = fc.complete(0, y, grid)
    loo = fc.leave_one_out_predictive(completed, grid)
    assert table.expected.sum() == pytest.approx(loo[y[:, 3] >= 0, 3, :].sum(), rel=1e-12)
    uncompleted = fc.observed_expected(y, grid, item=3, n_groups=8, seed=None)
    loo = fc.leave_one_out_predictive(y, grid)
    assert uncompleted.expected.sum() == pytest.approx(np.nansum(loo[:, 3, :]), rel=1e-12)
    by_group = table.groupby("group").first()
    assert by_group.mean_order.is_monotonic_increasing and by_group.mean_expected_score.is_monotonic_increasing
    # with no pooling needed, the table gives item_fit's statistic
    fit = fc.item_fit(y, grid, n_groups=8, n_parameters=0).iloc[3]
    assert fit.pooled == 0
    assert fit.statistic == pytest.approx(((table.observed - table.expected) ** 2 / table.expected).sum())


# ----------------------------------------------------------------------------------------------
# person fit


def test_person_fit_flags_reversed_responders_and_is_centred_under_the_model():
    a, d = np.linspace(0.8, 2.0, 20), np.linspace(-1.5, 1.5, 20)
    y, rng = simulate_2pl(51, 2000, a, d)  # seed 51, I = 20, N = 2000
    y[rng.random(y.shape) < 0.1] = -1
    grid = binary_grid(a, d)
    fit = fc.person_fit(y, grid)
    assert list(fit.columns) == ["person", "n_observed", "lz", "flagged"]
    # lz at an estimated ability is not standard normal (Snijders 2001): for 20 items at the
    # EAP its mean is about +0.25 and its sd about 0.8; at the true abilities it is 0 and 1
    assert abs(fit.lz.mean()) < 0.4 and 0.6 < fit.lz.std() < 1.05
    assert fit.flagged.mean() < 0.06
    aberrant = np.arange(100)
    y_rev = y.copy()
    y_rev[aberrant] = np.where(y[aberrant] >= 0, 1 - y[aberrant], -1)
    rev = fc.person_fit(y_rev, grid)
    assert rev.lz[aberrant].mean() < -2.0 and rev.flagged[aberrant].mean() > 0.5


def test_person_fit_equals_the_closed_form_at_the_eap():
    a, d = np.linspace(0.8, 2.0, 8), np.linspace(-1.0, 1.0, 8)
    y, _ = simulate_2pl(61, 5, a, d)  # seed 61
    y[0, :7] = -1  # one observed item: no lz
    y[1, 2] = -1
    grid = binary_grid(a, d)
    fit = fc.person_fit(y, grid)
    assert np.isnan(fit.lz[0]) and not fit.flagged[0] and fit.n_observed[0] == 1
    eap = np.exp(fc.person_posteriors(y, grid)[:, 0, :]) @ grid.order
    for n in range(1, 5):
        obs = y[n] >= 0
        p = expit(a * eap[n] - d)[obs]
        yn = y[n, obs]
        l0 = np.sum(yn * np.log(p) + (1 - yn) * np.log1p(-p))
        e = np.sum(p * np.log(p) + (1 - p) * np.log1p(-p))
        v = np.sum(p * (1 - p) * np.log(p / (1 - p)) ** 2)
        # binary items: interpolating log-probabilities between nodes is exact in the logit
        assert fit.lz[n] == pytest.approx((l0 - e) / np.sqrt(v), abs=1e-9)


# ----------------------------------------------------------------------------------------------
# local dependence


def test_residual_correlations_are_pairwise_and_see_a_dependent_pair():
    y, rng = simulate_2pl(71, 2000, A10, D10)  # seed 71, N = 2000, 20% MCAR
    y[rng.random(y.shape) < 0.2] = -1
    y[:1995, 0] = -1  # item 0: five answers, too few to correlate
    grid = binary_grid(A10, D10)
    q3 = fc.residual_correlations(y, grid)
    assert q3.shape == (10, 10) and np.allclose(q3, q3.T, equal_nan=True)
    assert np.isnan(q3[0]).all() and np.diag(q3)[1:].tolist() == [1.0] * 9
    off = q3[1:, 1:][~np.eye(9, dtype=bool)]
    # under local independence Q3 centres near -1/(I - 1) (Yen 1984), not 0
    assert off.mean() == pytest.approx(-1 / 9, abs=0.05) and np.abs(off).max() < 0.2
    # item 9 copies item 8 for 60% of the persons (same seed, before the missing cells)
    y, rng = simulate_2pl(71, 2000, A10, D10)
    y[:, 9] = np.where(rng.random(2000) < 0.6, y[:, 8], y[:, 9])
    y[rng.random(y.shape) < 0.2] = -1
    q3 = fc.residual_correlations(y, grid)
    off = np.where(np.eye(10, dtype=bool), np.nan, q3)
    assert np.unravel_index(np.nanargmax(np.abs(off)), off.shape) in {(8, 9), (9, 8)} and q3[8, 9] > 0.3
    assert fc.max_abs_residual_correlation(y, grid) == pytest.approx(q3[8, 9])


# ----------------------------------------------------------------------------------------------
# replications


def test_replicate_keeps_the_mask_and_reproduces_the_margins():
    a, cuts, n_cat, scale = small_grm()
    cuts = np.nan_to_num(cuts, nan=9.0)
    grid = fc.grm_grid(a, cuts, n_cat, scale)
    y, rng = simulate_grm(81, 1500, a, cuts, n_cat, scale)  # seed 81, N = 1500, 30% MCAR
    y[rng.random(y.shape) < 0.3] = -1
    reps = fc.replicate(7, y, grid, n=3)
    assert reps.shape == (3, 1500, 6) and reps.dtype == np.int64
    assert ((reps < 0) == (y < 0)[None]).all()
    assert (reps < n_cat[None, None, :]).all()
    np.testing.assert_array_equal(reps, fc.replicate(np.random.default_rng(7), y, grid, n=3))
    import jax

    # a typed JAX key and its raw words seed the same draws
    typed, raw = fc.replicate(jax.random.key(5), y, grid), fc.replicate(jax.random.PRNGKey(5), y, grid)
    np.testing.assert_array_equal(typed, raw)
    # item means of replicated data match the data within sampling error
    obs_mean = np.array([y[y[:, j] >= 0, j].mean() for j in range(6)])
    rep_mean = np.array([reps[:, y[:, j] >= 0, j].mean() for j in range(6)])
    assert np.abs(obs_mean - rep_mean).max() < 0.1


def test_predictive_p_values_and_an_lcdm_grid():
    # two attributes, four classes, six items (seed 91, N = 1000)
    rng = np.random.default_rng(91)
    class_p = np.array([0.3, 0.2, 0.2, 0.3])
    correct = np.array([[0.2, 0.8, 0.2, 0.85], [0.15, 0.2, 0.8, 0.9], [0.2, 0.2, 0.2, 0.8]] * 2).T  # (C, I)
    z = rng.choice(4, 1000, p=class_p)
    y = (rng.random((1000, 6)) < correct[z]).astype(np.int64)
    y[rng.random(y.shape) < 0.15] = -1
    grid = fc.lcdm_grid(np.log(class_p), correct)
    assert grid.order is None
    pf = fc.person_fit(y, grid)
    assert np.isfinite(pf.lz[pf.n_observed >= 2]).all()
    stat = lambda data: fc.item_fit(data, grid, n_groups=5, n_parameters=0)["statistic"].to_numpy()
    p = fc.predictive_p_values(y, grid, stat, n_replications=19, seed=3)
    assert p.shape == (6,) and ((p >= 1 / 20) & (p <= 1)).all()
    assert np.all(np.isclose(p * 20, np.round(p * 20)))  # (1 + count) / (1 + R)
    assert (p > 0.05).sum() >= 4  # the true model: most items not extreme


def test_a_saturated_binary_fit_keeps_both_categories_of_its_items():
    # a fit whose probabilities round to exactly 0 or 1 at every state (an LCDM logit of -800, a
    # 2PNO predictor of -60): answers of the impossible category are still answers of a binary
    # item, checked (and misfitting), not refused as out of range
    correct = np.array([[expit(-800.0), 0.5], [expit(-800.0), 0.6]])  # (C, I)
    assert correct[0, 0] == 0.0
    y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]] * 10)
    checks = fc.check(y, fc.lcdm_grid(np.log([0.5, 0.5]), correct), n_replications=5)
    assert checks.items.loc[0, "statistic"] > 1e6  # the impossible answers show as misfit
    grid = fc.twopno_grid(np.array([1.0, 1.0]), np.array([60.0, 0.0]), n_nodes=11)
    assert (grid.probs > 0).all()
    assert len(fc.check(y, grid, n_replications=5).items) == 2


def test_item_fit_is_calibrated_on_complete_binary_data_with_tied_rest_patterns():
    # Complete binary data have many persons with the same other responses, hence exactly the
    # same leave-one-out score; the groups must not sort such a tie block by the response
    # itself (a bug that rejected 31% of true-model items at 5%). 10 data sets (seeds 100-109)
    # of 2,000 persons x 10 items at the true item values: rejection at most 10% and KS p > 0.01.
    from scipy import stats

    from bayesirt.data import simulate

    ps = []
    for r in range(10):
        rm, truth = simulate.simulate_factorized_grm(100 + r, 2000, [10], 2, ["A"])
        a = truth[truth.parameter == "discrimination"].value.to_numpy()
        b = truth[truth.parameter == "base_difficulty"].value.to_numpy()
        grid = fc.grm_grid(a, (a * b)[:, None], np.full(10, 2))
        ps.append(fc.item_fit(rm.responses, grid, n_parameters=0).p_value.to_numpy())
    ps = np.concatenate(ps)
    assert (ps < 0.05).mean() <= 0.10 and stats.kstest(ps, "uniform").pvalue > 0.01


def test_local_dependence_flags_the_items_of_a_second_factor_and_check_combines_the_flags():
    # 2,000 persons x 8 binary items (seed 12); items 5-7 also load 1.5 on a second, independent
    # factor. Checked at the 2PL values that generated the first factor (a point estimate):
    # those items' largest residual correlations are with each other and flagged at 5% (40 replications); the
    # others mostly not.
    rng = np.random.default_rng(12)
    theta = rng.standard_normal((2000, 2))
    a, b = rng.uniform(1.0, 2.0, 8), rng.uniform(-1.0, 1.0, 8)
    eta = a * (theta[:, :1] - b) + np.where(np.arange(8) >= 5, 1.5 * theta[:, 1:], 0.0)
    y = (rng.random(eta.shape) < expit(eta)).astype(np.int64)
    grid = fc.grm_grid(a, (a * b)[:, None], np.full(8, 2))
    ld = fc.local_dependence(y, grid, n_replications=40, seed=3)
    assert ld.loc[5:, "flagged"].all() and set(ld.loc[5:, "partner"]) <= {5, 6, 7}
    assert ld.loc[:4, "flagged"].sum() <= 2
    checks = fc.check(y, grid, n_parameters=0, n_replications=40, seed=3)
    assert (checks.items["flagged"] == (checks.items["fit_flagged"] | checks.items["ld_flagged"])).all()
    assert checks.summary["max_q3_items"][0] in (5, 6, 7) and checks.summary["items_local_dependence"] >= 3
    assert len(checks.persons) == 2000


@pytest.mark.parametrize("name", ["lsat7", "twopl", "graded"])
def test_sx2_equals_mirts_at_the_same_data_and_parameters(name):
    # R's mirt (1.47; tests/fixtures/sx2_mirt.R wrote the values in sx2_mirt.json) at fixed
    # item parameters, N(0, 1) ability: LSAT section 7 (1,000 x 5 binary, at its 2PL ML
    # estimates), a simulated 2PL (3,000 x 8) and a simulated GRM (4,000 x 5, 3 categories, whose
    # lowest and highest score groups hold an impossible category and are merged into their
    # neighbours by both). mirt integrates on 61 equally spaced points in [-6, 6]; with 41
    # Gauss-Hermite nodes (the default) they agree within 1e-3 (measured: 4.8e-4 at most, on the
    # GRM), with 61 within 2e-5 (measured 6.3e-6).
    spec = json.loads((FIXTURES / "sx2_mirt.json").read_text())["data"][name]
    table = np.loadtxt(FIXTURES / spec["patterns"], delimiter=",", skiprows=1, dtype=np.int64)
    y = np.repeat(table[:, :-1], table[:, -1], axis=0)
    a, d = np.asarray(spec["a"]), np.asarray(spec["d"])
    n_categories = np.full(a.size, d.shape[1] + 1)
    for n_nodes, tolerance in ((41, 1e-3), (61, 2e-5)):
        fit = fc.sx2_complete(y, fc.grm_grid(a, -d, n_categories, n_nodes=n_nodes), n_parameters=0)
        np.testing.assert_allclose(fit.statistic, spec["S_X2"], rtol=0, atol=tolerance)
    assert fit.df.tolist() == spec["df_S_X2"] and fit.groups.tolist() == spec["score_groups_after_collapsing"]


def test_item_fit_resolves_narrow_posteriors():
    """100 probit items at 10,000 persons (seed 7, discriminations about 1), checked at the
    generating values: a person's posterior sd is about 0.13, a quarter of the spacing of 41
    Gauss-Hermite nodes. On that grid the item fit flags most items of data drawn from the model
    itself; on the grid the items' information asks for (``nodes_for``) it flags about its level
    (5%; at most 12 of 100 items, a binomial tail of 0.1%)."""
    from bayesirt.data.simulate_binary import simulate_binary

    rm, truth = simulate_binary(7, 10_000, 100, model="2pno")
    items = truth[truth.person == -1]
    a = items[items.parameter == "discrimination"].sort_values("item").value.to_numpy()
    d = items[items.parameter == "difficulty"].sort_values("item").value.to_numpy()
    grid = fc.twopno_grid(a, d)
    assert grid.order.size == fc.nodes_for(lambda theta: _twopno_probs(a, d, theta), np.zeros(100, int)) > 41
    assert fc.item_fit(rm.responses, grid, n_parameters=0).flagged.sum() <= 12
    assert fc.item_fit(rm.responses, fc.twopno_grid(a, d, n_nodes=41), n_parameters=0).flagged.mean() > 0.5


def test_the_grid_s_nodes_follow_the_items_information():
    """A few weakly informative items keep the fewest nodes; the information of one scale is the
    closed form sum_j a_j^2 phi(eta)^2 / (Phi(eta) (1 - Phi(eta))) of the 2PNO."""
    a, d = np.full(5, 0.5), np.zeros(5)
    assert fc.twopno_grid(a, d).order.size == fc.MIN_NODES
    theta = np.linspace(-2, 2, 9)
    info = fc.information(lambda t: _twopno_probs(a, d, t), np.zeros(5, int), theta)[:, 0]
    eta = 0.5 * theta
    phi = np.exp(-0.5 * eta**2) / np.sqrt(2 * np.pi)
    np.testing.assert_allclose(info, 5 * 0.25 * phi**2 / (ndtr(eta) * ndtr(-eta)), rtol=1e-6)
    # two scales: each has its own information
    two = fc.information(lambda t: _twopno_probs(np.ones(4), np.zeros(4), t), np.array([0, 0, 0, 1]), theta)
    np.testing.assert_allclose(two[:, 0], 3 * two[:, 1], rtol=1e-9)
    wide = fc.grm_grid(np.full(40, 8.0), np.tile(np.linspace(-4, 4, 8), (40, 1)), np.full(40, 9))
    assert wide.order.size == fc.MAX_NODES  # the cap, where even that many are coarser than the rule
