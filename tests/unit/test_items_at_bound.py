"""Items whose discrimination sits at the positivity bound after a fit
(bayesirt.evaluation.irt_tables.items_at_lower_bound, warn_items_at_bound)."""

import logging

import numpy as np

from bayesirt.evaluation import irt_tables


def one_factor_table(a_means, sd=0.02, draws=200, seed=0):
    rng = np.random.default_rng(seed)
    a = np.abs(np.asarray(a_means)[None, :, None] + sd * rng.standard_normal((draws, len(a_means), 1)))
    d = rng.standard_normal((draws, len(a_means), 2))
    names = [f"Q{j + 1}" for j in range(len(a_means))]
    return irt_tables.item_table(a, d, [3] * len(a_means), names, ["s"] * len(a_means), ["s"])


def test_the_item_at_zero_is_flagged_and_no_other(caplog):
    items = one_factor_table([1.3, 0.049, 0.6])
    out = irt_tables.items_at_lower_bound(items)
    assert list(out.columns) == ["item", "item_name", "scale", "discrimination", "sd", "at_bound"]
    assert out.loc[out.at_bound, "item_name"].tolist() == ["Q2"]
    assert (out.sd > 0).all()
    with caplog.at_level(logging.WARNING, logger="bayesirt"):
        messages = irt_tables.warn_items_at_bound(items, "results/x/reference")
    assert len(messages) == 1 and [r.getMessage() for r in caplog.records] == messages
    assert messages[0].startswith("results/x/reference: item 'Q2' (scale 's'): discrimination 0.0")
    assert "sits at the lower bound 0" in messages[0] and "reverse_keyed" in messages[0]


def test_point_estimates_and_items_on_several_factors():
    # point estimates (one draw, no sd); item 1 loads on two factors (MDISC), small on both
    a = np.array([[[0.9, 0.0], [0.03, 0.04], [0.0, 0.05]]])
    d = np.zeros((1, 3, 1))
    items = irt_tables.item_table(a, d, [2, 2, 2], ["x", "y", "z"], ["s", "s", "s"], ["f1", "f2"])
    out = irt_tables.items_at_lower_bound(items).set_index("item_name")
    assert out.at_bound.to_dict() == {"x": False, "y": True, "z": True}
    assert np.isclose(out.discrimination["y"], 0.05) and out.sd.isna().all()
    # a negative slope of an unconstrained model is not at a bound
    neg = irt_tables.item_table(np.array([[[-0.05]]]), np.zeros((1, 1, 1)), [2], ["n"], ["s"], ["f"])
    assert not irt_tables.items_at_lower_bound(neg).at_bound.any()


def test_an_item_with_a_negative_item_rest_correlation_is_named_whatever_its_discrimination(caplog):
    import pandas as pd

    items = one_factor_table([1.3, 0.19, 0.6])
    item_rest = pd.DataFrame(
        {"item": ["Q1", "Q2", "Q3"], "correlation": [0.4, -0.54, 0.3], "flagged": [False, True, False]}
    )
    with caplog.at_level(logging.WARNING, logger="bayesirt"):
        messages = irt_tables.warn_items_at_bound(items, "fit", item_rest)
    assert len(messages) == 1 and messages[0].startswith("fit: item 'Q2' (scale 's'): discrimination 0.19")
    assert "positive only because the model keeps it so" in messages[0] and "-0.540" in messages[0]
