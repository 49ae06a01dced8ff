"""Missingness injection: rates, masks, keep-one guarantees, MAR/MNAR direction, bad input."""

import numpy as np
import pytest

from bayesirt.data import missingness
from bayesirt.io import Item, ResponseMatrix, read_responses, write_responses


def matrix(n_persons=400, n_items=12, n_categories=5, natural=0.02, seed=0):
    """Responses driven by one latent trait (so MAR drivers carry information), some missing."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_persons, 1))
    latent = theta + rng.normal(scale=0.7, size=(n_persons, n_items))
    cuts = np.linspace(-1.5, 1.5, n_categories - 1)
    y = (latent[..., None] > cuts).sum(-1).astype(np.int16)
    y[rng.random(y.shape) < natural] = -1
    items = [Item(f"X{j + 1}", n_categories, "A" if j < n_items // 2 else "B") for j in range(n_items)]
    return ResponseMatrix(y, items, {"source": "test"})


@pytest.mark.parametrize("kind", ["mcar", "mar", "mnar"])
def test_rate_mask_and_record(kind):
    rm = matrix()
    out, hidden = missingness.inject(rm, kind=kind, rate=0.15, seed=3)
    n_cells = rm.n_persons * rm.n_items
    assert hidden.shape == rm.responses.shape and hidden.dtype == bool
    # Hidden cells were observed before, are missing now; nothing else changed.
    assert np.all(rm.observed[hidden])
    assert np.all(out.responses[hidden] == -1)
    assert np.array_equal(out.responses[~hidden], rm.responses[~hidden])
    rec = out.attrs["missingness"]
    assert rec["kind"] == kind and rec["seed"] == 3 and rec["target_rate"] == 0.15
    assert abs(rec["achieved_rate"] - 0.15) <= 0.005
    assert rec["achieved_rate"] == hidden.sum() / n_cells
    assert out.attrs["source"] == "test"  # earlier attrs kept
    assert rm.attrs == {"source": "test"}  # input untouched


@pytest.mark.parametrize("kind", ["mcar", "mar", "mnar"])
def test_same_seed_same_mask_different_seed_differs(kind):
    rm = matrix()
    _, h1 = missingness.inject(rm, kind=kind, rate=0.2, seed=7)
    _, h2 = missingness.inject(rm, kind=kind, rate=0.2, seed=7)
    _, h3 = missingness.inject(rm, kind=kind, rate=0.2, seed=8)
    assert np.array_equal(h1, h2)
    assert not np.array_equal(h1, h3)


def test_keep_one_per_person_and_item_at_high_rate():
    rm = matrix(n_persons=60, n_items=6, natural=0.1, seed=1)
    out, _ = missingness.inject(rm, kind="mcar", rate=0.6, seed=0)
    had_any_person = rm.observed.any(1)
    had_any_item = rm.observed.any(0)
    assert np.all(out.observed.any(1)[had_any_person])
    assert np.all(out.observed.any(0)[had_any_item])


def test_unachievable_rate_names_the_rate():
    rm = matrix(n_persons=50, n_items=4, natural=0.3, seed=2)
    with pytest.raises(ValueError, match="rate 0.75 cannot be met"):
        missingness.inject(rm, rate=0.75)
    # without the keep-one guarantees more can be hidden, but never more than is observed
    with pytest.raises(ValueError, match="rate 0.8 cannot be met"):
        missingness.inject(rm, rate=0.8, keep_one_per_person=False, keep_one_per_item=False)


def test_bad_kind_rate_and_options():
    rm = matrix(n_persons=20, n_items=4)
    with pytest.raises(ValueError, match="kind 'nmar' is not known"):
        missingness.inject(rm, kind="nmar")
    with pytest.raises(ValueError, match="outside"):
        missingness.inject(rm, rate=1.5)
    with pytest.raises(ValueError, match="do not apply"):
        missingness.inject(rm, kind="mcar", strength=2.0)
    with pytest.raises(ValueError, match="not in the matrix"):
        missingness.inject(rm, kind="mar", drivers=["nope"])


def test_mcar_is_unrelated_to_values():
    rm = matrix(n_persons=3000, n_items=10, natural=0.0, seed=4)
    _, hidden = missingness.inject(rm, kind="mcar", rate=0.2, seed=1)
    y = rm.responses.astype(float)
    # mean of hidden vs kept responses: equal up to sampling noise (sd of the difference ~0.02)
    assert abs(y[hidden].mean() - y[~hidden].mean()) < 0.08


def test_mnar_hides_high_responses_more_often_and_negative_strength_reverses():
    rm = matrix(n_persons=3000, n_items=10, natural=0.0, seed=5)
    y = rm.responses.astype(float)
    _, up = missingness.inject(rm, kind="mnar", rate=0.2, seed=1, strength=1.0)
    _, down = missingness.inject(rm, kind="mnar", rate=0.2, seed=1, strength=-1.0)
    assert y[up].mean() > y[~up].mean() + 0.3
    assert y[down].mean() < y[~down].mean() - 0.3


def test_mar_depends_on_drivers_only_and_never_hides_them():
    rm = matrix(n_persons=3000, n_items=10, natural=0.0, seed=6)
    out, hidden = missingness.inject(rm, kind="mar", rate=0.2, seed=2, strength=1.5)
    drivers = out.attrs["missingness"]["drivers"]
    assert drivers == ["X1", "X6"]  # first item of scales A and B
    assert not hidden[:, [0, 5]].any()
    # persons with high driver means lose more responses
    dmean = rm.responses[:, [0, 5]].mean(1)
    per_person = hidden.sum(1)
    assert np.corrcoef(dmean, per_person)[0, 1] > 0.3


def test_zero_rate_hides_nothing():
    rm = matrix(n_persons=30, n_items=5)
    out, hidden = missingness.inject(rm, rate=0.0)
    assert not hidden.any() and np.array_equal(out.responses, rm.responses)


def test_outputs_roundtrip_through_files(tmp_path):
    rm = matrix(n_persons=40, n_items=5)
    out, hidden = missingness.inject(rm, kind="mnar", rate=0.1, seed=9)
    write_responses(out, tmp_path / "responses.parquet")
    missingness.write_hidden(out, hidden, tmp_path / "hidden.parquet")
    back = read_responses(tmp_path / "responses.parquet")
    assert np.array_equal(back.responses, out.responses)
    assert back.attrs["missingness"]["achieved_rate"] == out.attrs["missingness"]["achieved_rate"]
    assert np.array_equal(missingness.read_hidden(tmp_path / "hidden.parquet", back), hidden)


def test_written_outputs_identical_bit_for_bit(tmp_path):
    rm = matrix(n_persons=100, n_items=6)
    for run in ("a", "b"):
        out, hidden = missingness.inject(rm, kind="mar", rate=0.2, seed=5)
        write_responses(out, tmp_path / run / "responses.parquet")
        missingness.write_hidden(out, hidden, tmp_path / run / "hidden.parquet")
    for name in ("responses.parquet", "responses.json", "hidden.parquet"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
