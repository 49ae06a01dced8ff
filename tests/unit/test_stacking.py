"""Pairwise ordinal stacking imputation model and its five checks (seed 000, section 4).

Small simulated data (seeded) with throwaway MCAR via numpy; tolerances stated per assertion.
"""

import warnings

import numpy as np
import pytest

from bayesirt.imputation import checks, stacking, stacking_submodels
from bayesirt.io import Item, ResponseMatrix


def correlated(n=800, seed=0, missing=0.15, reverse_last=True):
    """Five 4-category items driven by one trait (the last one reverse-keyed) and one binary
    noise item unrelated to the trait."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    cols = []
    for j in range(5):
        sign = -1.0 if (reverse_last and j == 4) else 1.0
        latent = sign * 1.5 * theta + rng.logistic(size=n)
        cols.append(np.digitize(latent, [-1.5, 0.0, 1.5]))
    cols.append((rng.random(n) < 0.4).astype(int))
    y = np.stack(cols, 1).astype(np.int16)
    full = y.copy()
    hidden = rng.random(y.shape) < missing
    y[hidden] = -1
    items = [Item(f"X{j}", 4) for j in range(5)] + [Item("B", 2)]
    return ResponseMatrix(y, items), full, hidden


@pytest.fixture(scope="module")
def fitted():
    rm, full, hidden = correlated()
    return rm, full, hidden, stacking.fit(rm, stacking.StackingSettings(n_draws=200))


def test_contingency_tables_count_observed_pairs():
    rm, _, _ = correlated(n=300, seed=1)
    y = rm.responses
    counts = stacking_submodels.contingency_tables(y, rm.n_categories)
    for t, j in [(0, 1), (2, 4), (5, 0)]:
        for a in range(4):
            for k in range(rm.n_categories[t]):
                assert counts[t, j, a, k] == np.sum((y[:, j] == a) & (y[:, t] == k))
    assert counts[3, 3, 0].tolist() == np.bincount(y[y[:, 3] >= 0, 3], minlength=4).tolist()
    assert counts[3, 3, 1:].sum() == 0


def test_fit_converges_and_produces_proper_pmfs(fitted):
    rm, _, _, model = fitted
    n = rm.n_items
    assert model.fitted and model.converged.all()
    assert model.weights.shape == (n, n)
    np.testing.assert_allclose(model.weights.sum(1), 1.0, atol=1e-9)
    assert np.all(model.weights >= 0)
    sums = model.pmf_tables.sum(-1)  # (t, j, a): every predictor category has a PMF
    np.testing.assert_allclose(sums, 1.0, atol=1e-5)
    # categories beyond the binary item's two have probability zero
    assert np.all(model.pmf_tables[5, :, :, 2:] < 1e-12)
    assert np.all(model.pareto_k < 0.7) and np.all(np.isfinite(model.elpd_loo))
    assert model.info["n_submodels"] == n * n


def test_intercept_model_matches_observed_proportions(fitted):
    # posterior predictive of the intercept-only model within 0.02 of the observed shares
    rm, _, _, model = fitted
    for t in range(rm.n_items):
        obs = rm.responses[:, t][rm.responses[:, t] >= 0]
        share = np.bincount(obs, minlength=4)[:4] / obs.size
        np.testing.assert_allclose(model.pmf_tables[t, t, 0, :4], share, atol=0.02)


def test_regression_direction_and_weights(fitted):
    rm, _, _, model = fitted
    # predicting X0 from X1: higher X1 -> higher expected X0; from reverse-keyed X4: lower
    k = np.arange(4)
    mean_given = model.pmf_tables[0, 1] @ k
    assert np.all(np.diff(mean_given) > 0)
    mean_rev = model.pmf_tables[0, 4] @ k
    assert np.all(np.diff(mean_rev) < 0)
    # the trait items carry the weight for X0; the noise item B gets (almost) none
    assert model.weights[0, 5] < 0.05
    assert model.weights[0, 1:5].sum() > 0.8
    # and every trait-item pair model beats the intercept-only model in LOO
    assert np.all(model.elpd_loo[0, 1:5] > model.elpd_loo[0, 0])


def test_predictions_renormalise_over_observed_predictors(fitted):
    rm, _, _, model = fitted
    y = np.full((2, rm.n_items), -1, np.int16)
    y[1, 1] = 3  # person 1 answered only X1
    pmf = stacking.predict_pmf(model, y, np.array([0, 1]), np.array([0, 0]))
    # nobody's predictor observed: the intercept-only model alone
    np.testing.assert_allclose(pmf[0], model.pmf_tables[0, 0, 0], atol=1e-12)
    w = model.weights[0, [0, 1]] / model.weights[0, [0, 1]].sum()
    np.testing.assert_allclose(pmf[1], w[0] * model.pmf_tables[0, 0, 0] + w[1] * model.pmf_tables[0, 1, 3], atol=1e-12)
    all_pmf = stacking.predict_pmf(model, rm.responses)
    assert all_pmf.shape == ((rm.responses < 0).sum(), 4)
    np.testing.assert_allclose(all_pmf.sum(1), 1.0, atol=1e-9)


def test_imputation_beats_the_marginal_on_hidden_cells(fitted):
    rm, full, hidden, model = fitted
    score = stacking.imputation_accuracy(model, rm.responses, full, hidden)
    assert score["n_cells"] == hidden.sum()
    assert score["log_score"] > score["marginal_log_score"] + 0.05  # observed gain: ~0.09 nats per cell
    assert score["accuracy"] > score["marginal_accuracy"]


def test_onehot_predictor_fits_too():
    rm, full, hidden = correlated(n=500, seed=3)
    model = stacking.fit(rm, stacking.StackingSettings(predictor="onehot", n_draws=100))
    assert model.converged.all()
    np.testing.assert_allclose(model.weights.sum(1), 1.0, atol=1e-9)
    with pytest.raises(ValueError, match="predictor"):
        stacking.fit(rm, stacking.StackingSettings(predictor="spline"))


def test_save_load_roundtrip(fitted, tmp_path):
    _, _, _, model = fitted
    path = tmp_path / "imp.npz"
    stacking.save(model, path)
    back = stacking.load(path)
    assert back.item_names == model.item_names and back.item_types == model.item_types
    for name in ("pmf_tables", "weights", "elpd_loo", "pareto_k", "converged", "n_pairs"):
        assert np.array_equal(getattr(back, name), getattr(model, name)), name
    (tmp_path / "bad.npz").write_text("not a model")
    with pytest.raises(Exception, match="bad.npz"):
        stacking.load(tmp_path / "bad.npz")


def test_bad_input_is_refused():
    rm, _, _ = correlated(n=50)
    y = rm.responses.copy()
    y[:, 2] = -1
    with pytest.raises(ValueError, match="'X2' has no observed response"):
        stacking.fit(ResponseMatrix(y, rm.items))


# ----------------------------------------------------------------------------- the five checks


def test_checks_pass_on_a_good_model(fitted):
    rm, _, _, model = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        record = checks.validate_imputation_model(model, [it.name for it in rm.items], rm.n_categories)
    assert record["fitted"] and record["coverage"] and record["variable_type"]
    assert record["convergence"]["ok"] and record["pareto_k"]["ok"]


def test_checks_fail_or_warn_with_clear_messages(fitted):
    rm, _, _, model = fitted
    names = [it.name for it in rm.items]
    with pytest.raises(checks.ImputationModelError, match="check 1 \\(fitted\\)"):
        checks.validate_imputation_model(model._replace(fitted=False), names)
    with pytest.raises(checks.ImputationModelError, match="check 2 \\(coverage\\).*'Q9'"):
        checks.validate_imputation_model(model, names + ["Q9"])
    with pytest.raises(checks.ImputationModelError, match="'X0' has 5 categories"):
        checks.validate_imputation_model(model, names, [5] + list(rm.n_categories[1:]))
    types = list(model.item_types)
    types[2] = "continuous"
    with pytest.raises(checks.ImputationModelError, match="check 3 .*'X2' is continuous"):
        checks.validate_imputation_model(model._replace(item_types=types), names)
    conv = model.converged.copy()
    conv[3] = False
    with pytest.warns(checks.ImputationModelWarning, match="check 4 .*'X3'"):
        rec = checks.validate_imputation_model(model._replace(converged=conv), names)
    assert rec["convergence"]["items_without_converged_submodel"] == ["X3"]
    k = model.pareto_k.copy()
    k[1, model.weights[1].argmax()] = 0.9
    with pytest.warns(checks.ImputationModelWarning, match="check 5 .*'X1'"):
        rec = checks.validate_imputation_model(model._replace(pareto_k=k), names)
    assert rec["pareto_k"]["items_over_limit"] == {"X1": 0.9}
