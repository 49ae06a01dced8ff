"""The gibbs_2pno study: conditions from a config, config errors naming the key, and one tiny
fit whose record and estimates follow the result schemas."""

from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
import yaml

from bayesirt.config import ConfigError, check
from bayesirt.studies import gibbs_2pno

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "workflow" / "schemas"


def study(**design):
    return {"methods": list(gibbs_2pno.METHOD_NAMES),
            "designs": {"a": {"n_persons": 100, "n_items": 10, "missing": ["mcar0", "mcar20"], "replications": 2},
                        "b": {"n_persons": 50, "n_items": 5, "missing": ["mcar10"], "replications": 1, **design}}}


def test_conditions_are_designs_x_missing_x_methods_x_replications():
    conds = gibbs_2pno.conditions(study(nuts=True))
    # a: mcar0 -> gibbs only (omit is the same sampler without missing cells), mcar20 -> gibbs, gibbs_omit
    assert len(conds) == 2 * (1 + 2) + 3
    assert gibbs_2pno.Condition("b", "mcar10", "nuts", 0) in conds
    assert not any(c.design == "a" and c.method == "nuts" for c in conds)
    assert not any(c.missing == "mcar0" and c.method == "gibbs_omit" for c in conds)
    assert conds[0].path == "results/gibbs_2pno/a/mcar0/gibbs/rep0"
    assert gibbs_2pno.conditions({**study(), "enabled": False}) == []
    with pytest.raises(ValueError, match="'random20' is not"):
        gibbs_2pno.parse_missing("random20")


def test_config_errors_name_the_key():
    base = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["gibbs_2pno"]["priors"] = {"discrimination_var": 0.0}
    with pytest.raises(ConfigError, match="discrimination_var"):
        check(cfg, SCHEMAS / "config.schema.yaml")
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["gibbs_2pno"]["priors"] = {"theta_sd": 1.0}
    with pytest.raises(ConfigError, match="config key 'studies.gibbs_2pno.priors.theta_sd': unknown key"):
        check(cfg, SCHEMAS / "config.schema.yaml")
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["gibbs_2pno"]["designs"]["tiny"]["n_itemz"] = 3
    with pytest.raises(ConfigError, match="n_itemz"):
        check(cfg, SCHEMAS / "config.schema.yaml")
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["gibbs_2pno"]["methods"] = ["gibbs", "metropolis"]
    with pytest.raises(ConfigError, match="methods"):
        check(cfg, SCHEMAS / "config.schema.yaml")
    check(base, SCHEMAS / "config.schema.yaml")


@pytest.mark.slow  # compile-bound (~50 s); the workflow test checks the same schemas on its Gibbs fits
def test_tiny_fit_follows_the_result_schemas():
    design = {"n_persons": 40, "n_items": 4}
    rm, truth = gibbs_2pno.simulate_condition(design, "mcar20", 3, missing_seed=4)
    assert 0.15 < np.mean(rm.responses == -1) < 0.25
    cond = gibbs_2pno.Condition("t", "mcar20", "gibbs_omit", 0)
    cfg = {"gibbs": {"n_chains": 2, "n_warmup": 20, "n_samples": 30, "chunk": 25}}
    out = gibbs_2pno.run_fit(rm, truth, cond, study=cfg, seed=5)
    rec = out.record
    jsonschema.validate(rec, yaml.safe_load((SCHEMAS / "fit_record.schema.yaml").read_text()))
    assert rec["steps"] == 50 and rec["n_chains"] == 2 and rec["timing"]["item_min_ess_per_second"] > 0
    row_schema = yaml.safe_load((SCHEMAS / "estimates.schema.yaml").read_text())
    for row in out.estimates.to_dict("records"):
        jsonschema.validate(row, row_schema)
    est = out.estimates
    assert len(est) == 4 + 4 + 40 and est["true"].notna().all()
    assert (est["q5"] <= est["mean"]).all() and (est["mean"] <= est["q95"]).all()
    assert set(out.idata.posterior.data_vars) == {"discrimination", "difficulty", "ability"}


def test_real_data_design_fits_a_prepared_binary_data_set():
    from bayesirt.io import Item, ResponseMatrix

    rng = np.random.default_rng(0)
    y = (rng.uniform(size=(60, 5)) < 0.6).astype(np.int16)
    y[rng.uniform(size=y.shape) < 0.2] = -1  # natural missing cells
    rm = ResponseMatrix(y, [Item(f"q{j}", 2) for j in range(5)], {"source": "table"})
    out, truth = gibbs_2pno.observed_condition(rm, "mcar10", missing_seed=1, where="survey.csv")
    assert truth.empty and list(truth.columns)[:2] == ["parameter", "item"]
    assert out.attrs["natural_missing_rate"] == pytest.approx(np.mean(y == -1))
    # the extra 10% of all cells is hidden among the observed ones
    assert np.mean(out.responses == -1) == pytest.approx(np.mean(y == -1) + 0.1, abs=0.01)
    # both treatments of missing cells are fitted on real data, even with no extra missingness
    conds = gibbs_2pno.conditions({"designs": {"gss": {"dataset": "gss", "missing": ["mcar0"]}}})
    assert [c.method for c in conds] == ["gibbs", "gibbs_omit"]
    bad = ResponseMatrix(np.where(y == 1, 2, y), [Item(f"q{j}", 3) for j in range(5)], {})  # 3-category items
    with pytest.raises(ValueError, match=r"survey.csv: code 2 at person \d+, item 'q\d' is not binary"):
        gibbs_2pno.observed_condition(bad, "mcar0", missing_seed=1, where="survey.csv")


def test_real_data_design_must_name_a_known_dataset():
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["studies"]["gibbs_2pno"]["designs"]["survey"] = {"dataset": "nope"}
    with pytest.raises(ConfigError, match="studies.gibbs_2pno.designs.survey.dataset': 'nope' is not one of"):
        check(cfg, SCHEMAS / "config.schema.yaml")
    cfg["studies"]["gibbs_2pno"]["designs"]["survey"] = {"dataset": "x", "n_persons": 10, "n_items": 3}
    with pytest.raises(ConfigError, match="survey"):
        check(cfg, SCHEMAS / "config.schema.yaml")


def test_recovery_figure_of_real_data_sets_one_fit_against_another():
    import matplotlib

    matplotlib.use("Agg")
    from bayesirt import plotting

    rows = [{"parameter": p, "item": j if p != "ability" else -1, "person": j if p == "ability" else -1,
             "mean": 0.1 * j, "q5": 0.1 * j - 0.2, "q95": 0.1 * j + 0.2}
            for p in ("discrimination", "difficulty", "ability") for j in range(4)]
    est = pd.DataFrame(rows)
    fig = plotting.gibbs_recovery(est, est.assign(mean=est["mean"] + 0.01), "gibbs_omit")
    assert fig.axes[0].get_xlabel() == "posterior mean, gibbs_omit" and "no true values" in fig._suptitle.get_text()
    with pytest.raises(ValueError, match="no true values and no reference"):
        plotting.gibbs_recovery(est)


def test_real_data_example_config_passes_the_schema():
    cfg = yaml.safe_load((ROOT / "config" / "examples" / "gss_abortion.yaml").read_text())
    check(cfg, SCHEMAS / "config.schema.yaml")
    assert gibbs_2pno.conditions(cfg["studies"]["gibbs_2pno"])[0].design == "gss"
