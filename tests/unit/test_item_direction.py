"""Items keyed the wrong way (bayesirt.data.item_direction): a simulated questionnaire with one
item reversed on purpose is named, correctly keyed ones are not; table.load warns about it."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from bayesirt.data import item_direction, table
from bayesirt.data.simulate import simulate_factorized_grm
from bayesirt.io import MISSING, Item, ResponseMatrix


def simulated_with_one_reversed(seed=1, missing=0.1):
    rm, _ = simulate_factorized_grm(seed, 400, [6, 5], 5, scale_names=["first", "second"])
    y = rm.responses.copy()
    y[:, 2] = 4 - y[:, 2]  # Q3 reversed by mistake: the file's coding runs the other way
    rng = np.random.default_rng(seed)
    y[rng.random(y.shape) < missing] = MISSING
    return ResponseMatrix(y, rm.items, {"reoriented": True})


def test_the_reversed_item_is_flagged_and_no_other():
    out = item_direction.item_rest_correlations(simulated_with_one_reversed())
    assert list(out.columns) == ["item", "scale", "reverse_keyed", "correlation", "n_persons", "flagged"]
    assert out.loc[out.flagged, "item"].tolist() == ["Q3"]
    assert out.set_index("item").correlation["Q3"] < -0.2
    assert (out[out.item != "Q3"].correlation > 0.2).all(), out
    assert out.n_persons.between(300, 400).all()  # pairwise complete: persons missing the item left out


def test_declared_reverse_keys_count_as_reversed():
    rm = simulated_with_one_reversed(missing=0.0)
    items = [Item(it.name, it.n_categories, it.scale, it.name == "Q3") for it in rm.items]
    # the file as written (Q3 reversed), Q3 declared reverse-keyed and not re-scored yet: fine
    out = item_direction.item_rest_correlations(ResponseMatrix(rm.responses, items, {"reoriented": False}))
    assert not out.flagged.any(), out
    # declared reverse-keyed and already re-scored: the declaration was right, nothing to say
    y = rm.responses.copy()
    y[:, 2] = 4 - y[:, 2]
    assert not item_direction.item_rest_correlations(ResponseMatrix(y, items, {"reoriented": True})).flagged.any()


def test_one_item_scale_and_constant_rest_give_no_correlation():
    y = np.array([[0, 1, 0], [1, 1, 1], [1, 1, 0], [0, 1, 1]])
    items = [Item("a", 2, "s"), Item("b", 2, "s"), Item("c", 2, "alone")]
    out = item_direction.item_rest_correlations(ResponseMatrix(y, items))
    assert out.correlation.isna().all() and not out.flagged.any()


def test_load_warns_naming_the_item_and_reverse_keyed(tmp_path, caplog):
    rm = simulated_with_one_reversed(seed=2, missing=0.0)
    frame = pd.DataFrame(rm.responses + 1, columns=[it.name for it in rm.items])
    frame.insert(0, "id", [f"p{i}" for i in range(rm.n_persons)])
    path = tmp_path / "survey.csv"
    frame.to_csv(path, index=False)
    scales = {"first": [f"Q{i}" for i in range(1, 7)], "second": [f"Q{i}" for i in range(7, 12)]}
    with caplog.at_level(logging.WARNING, logger="bayesirt"):
        table.load(path, item_pattern=r"Q\d+", id_column="id", scales=scales, key="datasets.mine")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith(
        "item 'Q3' (scale 'first', not declared reverse-keyed): corrected item-rest correlation -0."
    )
    assert "add it to 'datasets.mine.reverse_keyed'" in warnings[0]
    # declared: no warning
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="bayesirt"):
        table.load(path, item_pattern=r"Q\d+", id_column="id", scales=scales, reverse_keyed=["Q3"])
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
