"""Item and person tables (evaluation.irt_tables, studies.fit_tables) against closed forms."""

from __future__ import annotations

import arviz as az
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from bayesirt import io, records
from bayesirt.evaluation import irt_tables
from bayesirt.io import Item, ResponseMatrix
from bayesirt.studies import fit_tables
from bayesirt.studies.base import MethodResult


def test_unidimensional_thresholds_are_where_the_boundary_curve_is_one_half():
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 2.5, (1, 3, 1))
    d = np.sort(rng.normal(0, 2, (1, 3, 3)), -1)[..., ::-1]  # intercepts decrease in k
    t = irt_tables.item_table(a, d, [4, 4, 3], ["x", "y", "z"], ["s"] * 3, ["F1"])
    b = t[(t.form == "irt") & (t.parameter == "b")]
    assert len(b) == 3 + 3 + 2  # item z has 3 categories: two thresholds, its third d is ignored
    for _, r in b.iterrows():
        j, k = r["item"], r["category"]
        # slope-intercept curve at theta = b_k: probability one half
        assert expit(a[0, j, 0] * r["mean"] + d[0, j, k - 1]) == pytest.approx(0.5, abs=1e-12)
        assert np.isnan(r["sd"])  # point estimates
    assert list(t.columns) == irt_tables.ITEM_COLUMNS
    assert (t[t.parameter == "b"].groupby("item")["mean"].apply(lambda s: s.is_monotonic_increasing)).all()


def test_multidimensional_items_get_mdisc_and_mdiff():
    a = np.array([[[1.2, 0.0], [0.6, 0.8]]])  # item 0 on F1 only, item 1 on both
    d = np.array([[[0.5], [-1.0]]])
    t = irt_tables.item_table(a, d, [2, 2], ["one", "two"], ["s", "s"], ["F1", "F2"])
    one = t[(t.item == 0) & (t.form == "irt")]
    assert set(one.parameter) == {"a", "b"} and one[one.parameter == "b"]["mean"].item() == pytest.approx(-0.5 / 1.2)
    assert set(t[(t.item == 0) & (t.form == "slope_intercept")].factor) == {"F1", ""}  # no fixed-zero slope row
    two = t[(t.item == 1) & (t.form == "irt")].set_index("parameter")["mean"]
    assert two["mdisc"] == pytest.approx(1.0)
    # at distance MDIFF along the item's direction the boundary probability is one half
    theta = two["mdiff"] * a[0, 1] / np.linalg.norm(a[0, 1])
    assert expit(a[0, 1] @ theta + d[0, 1, 0]) == pytest.approx(0.5)


def test_draws_give_posterior_means_of_the_irt_form_not_ratios_of_means():
    rng = np.random.default_rng(1)
    a = rng.lognormal(0, 0.5, (4000, 1, 1))
    d = rng.normal(1.0, 0.5, (4000, 1, 1))
    t = irt_tables.item_table(a, d, [2], ["x"], ["s"], ["F1"]).set_index(["form", "parameter"])
    b = -d[:, 0, 0] / a[:, 0, 0]
    assert t.loc[("irt", "b"), "mean"] == pytest.approx(b.mean())
    assert t.loc[("irt", "b"), "sd"] == pytest.approx(b.std(ddof=1))
    assert t.loc[("irt", "b"), "mean"] != pytest.approx(-d.mean() / a.mean(), rel=1e-3)


def small_matrix():
    y = np.array([[0, 1, 2, -1], [2, 2, 0, 1], [1, -1, 1, 0]])
    items = [Item("i1", 3, "A"), Item("i2", 3, "A"), Item("i3", 3, "B"), Item("i4", 2, "B")]
    return ResponseMatrix(y, items)


def test_factorized_fit_folder_to_tables(tmp_path):
    """A fit folder as grm_advi writes it (draws in posterior.nc, abilities in estimates.csv)."""
    rm = small_matrix()
    rng = np.random.default_rng(2)
    s = 50
    disc = rng.lognormal(0, 0.3, (1, s, 4))
    base = rng.normal(0, 1, (1, s, 4))
    inc = rng.lognormal(0, 0.3, (1, s, 4, 1))
    idata = az.from_dict(
        posterior={"discrimination": disc, "base_difficulty": base, "increments": inc},
        coords={"item": [it.name for it in rm.items], "increment": [1]},
        dims={"discrimination": ["item"], "base_difficulty": ["item"], "increments": ["item", "increment"]},
    )
    ability = pd.DataFrame(
        {
            "parameter": "ability",
            "item": -1,
            "person": np.repeat(np.arange(3), 2),
            "scale": ["A", "B"] * 3,
            "category": -1,
            "mean": np.arange(6.0),
            "sd": 0.5,
        }
    )
    records.write_fit(MethodResult({"model": "factorized_grm", "method": "advi"}, ability, None, idata), tmp_path)
    items, persons = fit_tables.tables(tmp_path, rm, ["a", "b", "c"])
    b = items[(items.form == "irt") & (items.parameter == "b") & (items.item == 0)].set_index("category")["mean"]
    tau = base[0, :, 0, None] + np.concatenate([np.zeros((s, 1)), np.cumsum(inc[0, :, 0], -1)], -1)
    np.testing.assert_allclose(b.to_numpy(), tau.mean(0))  # b_k is the model's threshold tau_k
    d = items[(items.form == "slope_intercept") & (items.parameter == "d") & (items.item == 0)]["mean"]
    np.testing.assert_allclose(d.to_numpy(), (-disc[0, :, 0, None] * tau).mean(0))
    assert items[(items.item == 3) & (items.parameter == "b")].shape[0] == 1  # a 2-category item
    assert set(items[items.parameter == "a"].factor) == {"A", "B"}
    # persons: one row per person and scale, ids attached, answered counts per scale
    assert list(persons.columns) == irt_tables.PERSON_COLUMNS
    row = persons[(persons.person_id == "b") & (persons.factor == "B")].iloc[0]
    assert row["score"] == 3.0 and row["sd"] == 0.5 and row["n_answered"] == 2
    assert persons[(persons.person_id == "a") & (persons.factor == "B")]["n_answered"].item() == 1


def test_tables_open_in_pandas_with_the_documented_columns(tmp_path):
    t = irt_tables.item_table(np.ones((1, 1, 1)), np.zeros((1, 1, 1)), [2], ["x"], ["s"], ["F1"])
    p = irt_tables.person_table(np.zeros((2, 1)), np.ones((2, 1)), ["F1"], ["u", "v"], np.ones((2, 1)), "test")
    io.write_table(t, tmp_path / "items.csv")
    io.write_table(p, tmp_path / "persons.csv")
    assert list(pd.read_csv(tmp_path / "items.csv").columns) == irt_tables.ITEM_COLUMNS
    assert list(pd.read_csv(tmp_path / "persons.csv").columns) == irt_tables.PERSON_COLUMNS


def test_unknown_model_is_refused(tmp_path):
    io.write_json({"model": "lcdm"}, tmp_path / "fit.json")
    pd.DataFrame({"parameter": []}).to_csv(tmp_path / "estimates.csv", index=False)
    with pytest.raises(ValueError, match="not 'lcdm'"):
        fit_tables.tables(tmp_path, small_matrix())


def binary_fit(tmp_path, model, idata=None):
    rm = ResponseMatrix(np.array([[0, 1, -1], [1, 1, 0]]), [Item(f"b{j}", 2) for j in range(3)])
    est = pd.DataFrame(
        {
            "parameter": ["discrimination"] * 3 + ["difficulty"] * 3 + ["ability"] * 2,
            "item": [0, 1, 2, 0, 1, 2, -1, -1],
            "person": [-1] * 6 + [0, 1],
            "mean": [1.0, 2.0, 0.5, -1.0, 0.5, 1.0, 0.3, -0.4],
            "sd": [0.1, 0.2, 0.05, 0.3, 0.2, 0.1, 0.9, 0.8],
        }
    )
    records.write_fit(MethodResult({"model": model, "method": "m"}, est, None, idata), tmp_path)
    return rm


def test_binary_models_intercept_is_minus_difficulty(tmp_path):
    """2PL/2PNO: eta = a theta - difficulty, so d = -difficulty and b = difficulty / a."""
    rm = binary_fit(tmp_path, "2pl")
    items, persons = fit_tables.tables(tmp_path, rm)
    t = items.set_index(["item", "form", "parameter"])
    assert t.loc[(1, "slope_intercept", "d"), "mean"] == -0.5 and t.loc[(1, "slope_intercept", "d"), "sd"] == 0.2
    assert t.loc[(1, "irt", "b"), "mean"] == pytest.approx(0.25) and np.isnan(t.loc[(1, "irt", "b"), "sd"])
    assert persons["n_answered"].tolist() == [2, 3] and persons["score"].tolist() == [0.3, -0.4]


def test_binary_draws_are_used_where_the_fit_kept_them(tmp_path):
    rng = np.random.default_rng(3)
    a, diff = rng.lognormal(0, 0.2, (2, 100, 3)), rng.normal(0, 1, (2, 100, 3))
    idata = az.from_dict(
        posterior={"discrimination": a, "difficulty": diff}, dims={"discrimination": ["item"], "difficulty": ["item"]}
    )
    rm = binary_fit(tmp_path, "2pno", idata)
    t = fit_tables.tables(tmp_path, rm)[0].set_index(["item", "form", "parameter"])
    assert t.loc[(2, "irt", "b"), "mean"] == pytest.approx((diff[..., 2] / a[..., 2]).mean())
    assert t.loc[(2, "irt", "b"), "sd"] == pytest.approx((diff[..., 2] / a[..., 2]).std(ddof=1))
