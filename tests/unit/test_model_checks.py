"""Model checks beside a fit (studies.model_checks): the grid is the fit's model at the values
of its items.csv, the files follow their schemas, and a fit without item values or of a model
the checks do not handle gets a one-line message naming it."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from bayesirt import io
from bayesirt.evaluation import fit_checks
from bayesirt.studies import model_checks


def fit_folder(tmp_path, model, a, d, factors, seed=5):
    """A fit folder with fit.json and the slope-intercept rows of items.csv (d: (I, K-1))."""
    rows = []
    for j, (aj, dj) in enumerate(zip(a, d, strict=True)):
        rows.append(
            {"item": j, "form": "slope_intercept", "parameter": "a", "factor": factors[j], "category": -1, "mean": aj}
        )
        rows += [
            {"item": j, "form": "slope_intercept", "parameter": "d", "factor": "", "category": k + 1, "mean": v}
            for k, v in enumerate(dj)
        ]
    pd.DataFrame(rows).to_csv(tmp_path / "items.csv", index=False)
    (tmp_path / "fit.json").write_text(json.dumps({"model": model, "seed": seed}))
    return tmp_path


def matrix(y, k, scales):
    items = [io.Item(f"Q{j + 1}", k, scales[j]) for j in range(y.shape[1])]
    return io.ResponseMatrix(y, items)


def test_the_grid_is_the_fits_model_at_its_items_values(tmp_path):
    a, d = np.array([1.0, 1.5, 0.8]), np.array([[1.0, -0.5], [0.3, -1.0], [0.0, -2.0]])
    folder = fit_folder(tmp_path, "factorized_grm", a, d, ["A", "A", "B"])
    y = np.zeros((4, 3), np.int64)
    grid = model_checks.grid(folder, matrix(y, 3, ["A", "A", "B"]))
    expected = fit_checks.grm_grid(a, -d, np.full(3, 3), np.array([0, 0, 1]))
    np.testing.assert_allclose(grid.probs, expected.probs)
    assert list(grid.scale_index) == [0, 0, 1]


def test_the_2pno_uses_the_probit_link(tmp_path):
    folder = fit_folder(tmp_path, "2pno", np.array([1.2, 0.7]), np.array([[0.4], [-0.3]]), ["theta", "theta"])
    grid = model_checks.grid(folder, matrix(np.zeros((2, 2), np.int64), 2, ["A", "A"]))
    np.testing.assert_allclose(grid.probs, fit_checks.twopno_grid(np.array([1.2, 0.7]), np.array([-0.4, 0.3])).probs)


def test_written_files_follow_their_schemas(tmp_path, schema):
    # 1,500 persons x 6 binary items from the 2PL at the values in items.csv (seed 8), 10% missing
    rng = np.random.default_rng(8)
    a, d = rng.uniform(0.8, 2.0, 6), rng.uniform(-1, 1, (6, 1))
    y = (rng.random((1500, 6)) < expit(rng.standard_normal((1500, 1)) * a + d[:, 0])).astype(np.int64)
    y[rng.random(y.shape) < 0.1] = -1
    folder = fit_folder(tmp_path, "2pl", a, d, ["theta"] * 6)
    checks = model_checks.write(folder, matrix(y, 2, ["A"] * 6), n_replications=10)
    for name in ("item_fit", "person_fit"):
        for row in pd.read_csv(folder / f"{name}.csv").to_dict("records"):
            schema(name).validate({k: (v if v == v else None) for k, v in row.items()})
    summary = json.loads((folder / "global_fit.json").read_text())
    schema("global_fit").validate(summary)
    assert summary["model"] == "2pl" and summary["replications"] == 10 and len(checks.persons) == 1500
    assert checks.summary["items_misfit"] <= 2  # data from the model itself


@pytest.mark.parametrize(
    "model, with_items, message",
    [
        ("mixture_grm", True, "model checks exist for the models"),
        ("factorized_grm", False, "kept no item estimates or draws to check"),
    ],
)
def test_a_fit_without_item_values_or_of_another_model_is_named(tmp_path, model, with_items, message):
    folder = fit_folder(tmp_path, model, np.array([1.0]), np.array([[0.0]]), ["A"])
    if not with_items:
        (folder / "items.csv").unlink()
    with pytest.raises(ValueError, match=message) as err:
        model_checks.grid(folder, matrix(np.zeros((2, 1), np.int64), 2, ["A"]))
    assert str(folder) in str(err.value) and "\n" not in str(err.value)


def test_large_data_are_checked_on_a_seeded_subset_of_persons(tmp_path):
    rng = np.random.default_rng(9)
    a, d = rng.uniform(0.8, 2.0, 4), rng.uniform(-1, 1, (4, 1))
    y = (rng.random((500, 4)) < expit(rng.standard_normal((500, 1)) * a + d[:, 0])).astype(np.int64)
    folder = fit_folder(tmp_path, "2pl", a, d, ["theta"] * 4)
    checks = model_checks.write(folder, matrix(y, 2, ["A"] * 4), n_replications=5, max_persons=200)
    summary = json.loads((folder / "global_fit.json").read_text())
    assert summary["persons"] == 500 and summary["persons_checked"] == 200
    persons = pd.read_csv(folder / "person_fit.csv")
    assert len(persons) == 200 and persons["person"].is_monotonic_increasing and persons["person"].max() < 500
    again = model_checks.write(folder, matrix(y, 2, ["A"] * 4), n_replications=5, max_persons=200)
    assert again.persons.equals(checks.persons)  # the fit's seed fixes the subset


def test_an_lcdm_fit_is_checked_on_its_profiles(tmp_path):
    # 2 attributes, 6 items (Q rows 10, 01, 11, 10, 01, 11), 3,000 persons (seed 4) from the
    # LCDM at the values in estimates.csv: the grid's states are the 4 profiles with the given
    # probabilities, and at those (known, so no parameter is subtracted from the df) values at
    # most one item fit is flagged
    from bayesirt.models import lcdm

    rng = np.random.default_rng(4)
    q = np.array([[1, 0], [0, 1], [1, 1], [1, 0], [0, 1], [1, 1]])
    des = lcdm.design(q)
    beta = np.where(des.feature_mask > 0, rng.uniform(1.0, 2.0, des.feature_mask.shape), 0.0)
    beta[:, 0] = -1.5
    pi = np.array([0.3, 0.2, 0.2, 0.3])
    p_correct = expit(np.einsum("jck,jk->cj", des.delta, beta))
    profile = rng.choice(4, 3000, p=pi)
    y = (rng.random((3000, 6)) < p_correct[profile]).astype(np.int64)
    rows = [{"parameter": "profile_probability", "item": -1, "category": c, "mean": v} for c, v in enumerate(pi)]
    rows += [
        {"parameter": "beta", "item": j, "category": k, "mean": beta[j, k]}
        for j in range(6)
        for k in range(des.n_features[j])
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "estimates.csv", index=False)
    (tmp_path / "fit.json").write_text(json.dumps({"model": "lcdm", "seed": 2}))
    rm = io.ResponseMatrix(y, [io.Item(f"Q{j}", 2, "all") for j in range(6)], {"q_matrix": q.tolist()})
    grid = model_checks.grid(tmp_path, rm)
    np.testing.assert_allclose(np.exp(grid.log_weights), pi)
    np.testing.assert_allclose(grid.probs[..., 1], p_correct)
    assert fit_checks.item_fit(y, grid, n_parameters=0)["flagged"].sum() <= 1
    checks = model_checks.write(tmp_path, rm, n_replications=20)
    assert checks.summary["items"] == 6 and checks.summary["persons_checked"] == 3000


def test_collected_reads_every_fit_in_its_blocks_folder(tmp_path):
    # checks as the block jobs write them: <design>/<missing>/<method>/blocks/block<b>/rep<r>/
    for block, rep in ((0, 0), (0, 1), (1, 2)):
        folder = tmp_path / "n1k" / "mcar20" / "gibbs" / "blocks" / f"block{block}" / f"rep{rep}"
        folder.mkdir(parents=True)
        summary = {"items": 4, "items_flagged": rep, "items_misfit": 0, "items_local_dependence": 0}
        (folder / "global_fit.json").write_text(json.dumps({**summary, "persons_flagged_share": 0.1}))
        pd.DataFrame({"item": [0]}).to_csv(folder / "item_fit.csv", index=False)
        pd.DataFrame({"person": [0]}).to_csv(folder / "person_fit.csv", index=False)
    fits, items, persons = model_checks.collected(tmp_path)
    assert list(fits["rep"]) == [0, 1, 2] and list(fits["items flagged"]) == [0.0, 0.25, 0.5]
    assert set(fits["design"]) == {"n1k"} and set(fits["missing"]) == {"mcar20"} and set(fits["method"]) == {"gibbs"}
    assert list(items["rep"]) == [0, 1, 2] and len(persons) == 3
