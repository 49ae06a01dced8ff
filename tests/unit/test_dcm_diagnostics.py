"""dcm_bbvi's diagnostics (``studies.dcm_bbvi.diagnostics``): the study's own data sets, fits whose
start and end are known, sentences written from a table whose answer is known, and the page's
section from a diagnostics folder that a new collect keeps."""

import json

import numpy as np
import pandas as pd
import pytest

from bayesirt.seeds import derive
from bayesirt.studies import reproduction, reproduction_diagnostics
from bayesirt.studies.dcm_bbvi import conditions, data, diagnostics
from bayesirt.studies.dcm_bbvi import seed_methods as seed
from bayesirt.studies.dcm_bbvi.settings import Settings
from tests.configs import validated

DEFAULT = Settings.from_config(validated())  # the default config's: the schema's defaults


def oracle(rm, truth, q) -> float:
    return diagnostics.oracle_accuracy(rm, truth, q)["pattern_accuracy"]


def test_a_data_set_is_the_one_the_workflow_simulates_and_fits():
    rm, truth, q, fit_seed = diagnostics.data_set(7, 3, {"n_persons": 60})
    want, _, want_q = data.simulate(
        conditions.design_spec("seed", {"n_persons": 60}), 0.0, derive(7, "data", "dcm_bbvi", "seed", "mcar0", 3)
    )
    np.testing.assert_array_equal(rm.responses, want.responses)
    np.testing.assert_array_equal(q, want_q)
    assert (rm.responses >= 0).all() and fit_seed == derive(7, "fit", "dcm_bbvi", "seed", "mcar0", 3)


@pytest.fixture
def tiny(monkeypatch):
    """The seed's runs at 2 sweeps of at most 2 steps a block, M = 20 (as test_bbvi_seed's)."""
    for name, sched in seed.SCHEDULES.items():
        iters = tuple(min(i, 2) for i in sched.iterations)
        steps = (sched.steps[0], 1e-3 if sched.steps[1] else 0.0, *sched.steps[2:])
        monkeypatch.setitem(seed.SCHEDULES, name, sched._replace(n_sweeps=2, iterations=iters, steps=steps))
    monkeypatch.setattr(seed, "SEED_N_SAMPLES", 20)
    return diagnostics.data_set(7, 0, {"n_persons": 80})


def test_a_run_started_at_the_true_coefficients_and_never_moving_them_reports_so(tiny):
    rm, truth, q, fit_seed = tiny
    row = diagnostics.one_fit("bbvi_beta_truth_seed", 0, rm, truth, q, fit_seed, oracle(rm, truth, q), DEFAULT)
    assert set(row) == set(diagnostics.COLUMNS)
    assert row["steps"] == row["steps_planned"] == seed.SCHEDULES["bbvi_beta_truth_seed"].n_steps
    # q(beta) starts at the truth and its block takes no step: no move, no error, start = end
    assert row["beta_move_rms"] < 1e-6 and row["beta_rmse_start"] < 1e-6 and row["beta_rmse_end"] < 1e-6
    # the oracle's accuracy is the start's here: both are the modal profiles at the true
    # coefficients, with the true against equal profile probabilities
    assert abs(row["start_pattern_accuracy"] - row["oracle_pattern_accuracy"]) < 0.1


def test_bbvi_moves_from_its_start(tiny):
    rm, truth, q, fit_seed = tiny
    row = diagnostics.one_fit("bbvi", 0, rm, truth, q, fit_seed, 0.9, DEFAULT)
    assert row["beta_move_rms"] > 0 and 0 <= row["start_pattern_accuracy"] <= 1 and row["status"]


def test_the_probe_runs_one_sweep_of_the_seed_s_run_with_a_smaller_beta_step(tiny):
    rm, truth, q, fit_seed = tiny
    row = diagnostics.one_fit(diagnostics.PROBE, 0, rm, truth, q, fit_seed, 0.9, DEFAULT)
    assert row["steps_planned"] == sum(seed.FULL_MODEL.iterations) and diagnostics.PROBE_SCHEDULE.steps[1] == 1e-2
    assert row["beta_move_rms"] > 0  # unlike the seed runs that stop in their first sweep, it moves q(beta)


def table(**by_method) -> pd.DataFrame:
    rows = []
    for method, (status, steps, planned, acc, start_acc, rmse_start, rmse_end) in by_method.items():
        for rep in range(4):
            rows.append(
                {
                    "rep": rep,
                    "method": method,
                    "steps_planned": planned,
                    "steps": steps + rep,
                    "status": status,
                    "pattern_accuracy": acc,
                    "top2_accuracy": 1.0,
                    "start_pattern_accuracy": start_acc,
                    "oracle_pattern_accuracy": 0.97,
                    "beta_rmse_start": rmse_start,
                    "beta_rmse_end": rmse_end,
                    "beta_move_rms": abs(rmse_start - rmse_end) + 0.1,
                    "seconds": 1.0,
                }
            )
    return pd.DataFrame(rows, columns=diagnostics.COLUMNS)


def test_the_findings_say_what_a_table_whose_answer_is_known_says():
    fits = table(
        bbvi=("converged", 600, 4000, 0.951, 0.950, 0.54, 0.55),
        bbvi_seed=("diverged", 41, 16000, 0.23, 0.23, 1.7, 1.7),
        bbvi_beta_truth_seed=("reached max_steps", 150, 150, 0.96, 0.96, 0.0, 0.0),
    )
    probe = table(**{diagnostics.PROBE: ("reached max_steps", 80, 80, 0.23, 0.23, 1.7, 36.0)})
    text = "\n".join(diagnostics.findings(pd.concat([fits, probe])))
    assert "the first sweep (80 steps) ended finite on 4 of 4 data sets, with q(beta)'s RMSE" in text
    assert "going from 1.70 to 36.00 (medians). The step's size, not the gradient" in text
    assert "even a hundredth of it moves q(beta) away from the truth" in text
    assert "`bbvi_seed`: 4 of 4 runs became non-finite, after 41 to 44 of their 16000 planned steps" in text
    assert "within the first sweep (80 steps), so the accuracy shown for these runs is their start's" in text
    assert "`bbvi_beta_truth_seed`: all 4 runs took their planned steps" in text
    assert "their RMSE to the true coefficients ends farther (0.540 -> 0.550; nearer on 0 of 4 data sets)" in text
    assert "mostly its start's, not the optimiser's" in text
    gained = "\n".join(diagnostics.findings(table(bbvi=("converged", 600, 4000, 0.95, 0.80, 0.9, 0.3))))
    assert "The optimiser adds +0.150 to the start's accuracy" in gained and "ends nearer (0.900 -> 0.300" in gained


def test_the_page_shows_the_diagnostics_and_a_new_collect_keeps_them(tmp_path):
    out = tmp_path / "dcm_bbvi"
    (out / reproduction.DIAGNOSTICS).mkdir(parents=True)
    fits = table(bbvi_seed=("diverged", 41, 16000, 0.23, 0.23, 1.7, 1.7))
    fits.to_csv(out / reproduction.DIAGNOSTICS / "seed_design_fits.csv", index=False)
    facts = {"command": "python tools/reproduction.py diagnose dcm_bbvi", "commit": "abcdef0123", "seconds": 120}
    (out / reproduction.DIAGNOSTICS / "diagnostics.json").write_text(json.dumps(facts))
    text = reproduction.diagnostics_section("dcm_bbvi", out)
    assert text.startswith("## Diagnostics: the seed's method or this implementation?")
    assert "first 4 data sets" in text and "commit `abcdef0`" in text and "| 4 | 4 | 42 of 16000 |" in text
    assert reproduction.diagnostics_section("gibbs_2pno", out) == ""  # a study without diagnostics
    assert reproduction.diagnostics_section("dcm_bbvi", tmp_path / "none") == ""  # not run
    assert reproduction.DIAGNOSTICS in reproduction.KEPT


@pytest.mark.slow
def test_the_doubled_fits_are_the_config_s_then_twice_the_longest_one_s_steps():
    # config/test.yaml's dcm_bbvi (seed design at 200 persons, 20% MCAR, EM and BBVI with
    # 80-160 steps): EM and BBVI on both data sets, as configured and with the steps (EM's
    # iterations) doubled, no early stop
    from tests.unit.test_rb_study import validated

    config = validated()
    doubled = diagnostics.doubled_fits(config, 5, progress=lambda line: None)
    assert list(doubled.columns) == diagnostics.DOUBLED_COLUMNS and len(doubled) == 4
    assert list(doubled.method) == ["em", "em", "bbvi", "bbvi"] and set(doubled.design) == {"seed"}
    assert set(doubled.missing) == {"mcar20"} and list(doubled.rep) == [0, 1, 0, 1]
    for _, d in doubled.groupby("method"):
        assert (d.steps_doubled == 2 * d.steps.max()).all()
    assert (doubled[doubled.method == "bbvi"].steps <= 160).all()
    assert doubled[["pattern_accuracy", "pattern_accuracy_doubled"]].apply(lambda c: c.between(0, 1)).all().all()
    assert np.isfinite(doubled[["beta_rmse", "beta_rmse_doubled"]]).all().all()


def test_the_diagnostics_run_only_the_parts_asked_for_and_refuse_an_unknown_one(tmp_path, monkeypatch):
    monkeypatch.setitem(diagnostics.PARTS, "seed_design_fits", lambda config, n: pd.DataFrame({"n": [n]}))
    monkeypatch.setitem(diagnostics.PARTS, "doubled_fits", lambda config, n: pd.DataFrame({"m": [n]}))
    assert list(reproduction_diagnostics.diagnostic_parts("dcm_bbvi", ("doubled_fits",))) == ["doubled_fits"]
    assert list(reproduction_diagnostics.diagnostic_parts("dcm_bbvi")) == ["seed_design_fits", "doubled_fits"]
    out = reproduction_diagnostics.diagnose(
        "dcm_bbvi", {"seed": 1}, 3, tmp_path, {"command": "c"}, parts=["doubled_fits"]
    )
    assert sorted(p.name for p in out.iterdir()) == ["diagnostics.json", "doubled_fits.csv"]
    with pytest.raises(ValueError, match="unknown part.*oracle.*the parts are seed_design_fits, doubled_fits"):
        reproduction_diagnostics.diagnostic_parts("dcm_bbvi", ("oracle",))
