"""Every benchmark case runs end to end at its smoke size (``benchmarks/run.py --smoke``; the
longest few under the slow marker) and reports its figures: a case broken by a change elsewhere
fails the tests, not the next person who runs it at full size. Not a test of speed: no figure
is judged, only that it is there."""

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bayesirt import runtime

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("benchmarks_run", ROOT / "benchmarks" / "run.py")
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

# Every smoke result has these; each case also its own headline figures (what its docstring
# promises to report), so that a case that runs but stops reporting a figure fails too.
COMMON = {"case", "smoke", "sizes", "wall_seconds", "case_seconds", "smoke_sizes"}
TARGETS = ("targets", "targets_met")
FIGURES = {
    "bulk_replications": [
        "iwae_speedup",
        "iwavb_speedup",
        "fixed_seconds_per_replication_before",
        "fixed_seconds_per_replication_after",
        "eval_seconds_per_replication_after",
        "block_memory_mb",
        "fits_device",
        "iwae_bulk_over_one_fit",
        "iwavb_bulk_over_one_fit",
        "iwae_block_step_seconds",
        "iwavb_block_step_seconds",
    ],
    "paper_plan": [
        "jobs_before",
        "jobs_after",
        "copy_jobs_after",
        "submissions_before",
        "submissions_after",
        "snakemake_seconds_per_job",
        "snakemake_hours_before",
        "snakemake_hours_after",
    ],
    "convergence_grid": [
        *TARGETS,
        "iwae_grm_8k",
        "grm_advi_rwa_size",
        "best_heldout_loglik_per_person",
        "max_loglik_gap_converged",
        "max_discrimination_rmse_ratio_converged",
    ],
    "dcm_bbvi_seed_design": [
        *TARGETS,
        "em_pattern_accuracy",
        "bbvi_pattern_accuracy",
        "bbvi_cv_pattern_accuracy",
        "collapsed_vi_pattern_accuracy",
        "bbvi_seconds",
        "oracle_over_data_sets",
        "gradient_variance_reduction",
    ],
    "dcm_em_seed_design": [*TARGETS, "em_seconds", "pattern_accuracy", "beta_rmse", "missing20_pattern_accuracy"],
    "dcm_monotone_seed_design": [
        "em_pattern_accuracy",
        "em_monotone_pattern_accuracy",
        "bbvi_cv_monotone_seconds",
        "bbvi_cv_monotone_minus_plain_points",
        "compile_seconds",
        "steps",
    ],
    "dcm_scaling": [
        *TARGETS,
        "collapsed_vi_seconds",
        "em_seconds",
        "bbvi_seconds",
        "peak_memory_gb",
        "oracle_pattern_accuracy",
    ],
    "default_workflow": ["config", "command", "n_jobs"],
    "gibbs_2pno_10k100": [
        "seconds_per_sweep",
        "max_r_hat",
        "min_ess_per_second",
        "scaling",
        "scaling_slope_ns_per_cell_per_sweep",
        "compile_seconds",
    ],
    "gibbs_2pno_1k30": [
        *TARGETS,
        "four_chain_wall_seconds",
        "four_over_one_ratio",
        "ns_per_response_per_sweep",
        "one_chain",
        "four_chains",
    ],
    "gibbs_vs_nuts_ess": [
        *TARGETS,
        "gibbs_min_ess_per_second",
        "nuts_min_ess_per_second",
        "ess_per_second_ratio_min",
        "gibbs_max_r_hat",
    ],
    "grm_advi_rwa_size": [*TARGETS, "discrimination_rmse", "ability_corr", "steps", "converged"],
    "uncertainty_calibration": [
        *TARGETS,
        "mml_coverage_90",
        "advi_coverage_90",
        "advi_mean_field_coverage_90",
        "real_advi_sd_to_mml_se",
    ],
    "fit_checks_calibration": [
        *TARGETS,
        "ks_p_min",
        "rejection_5_worst",
        "power_min",
        "null",
        "comparison",
        "local_dependence_null",
        "power",
    ],
    "vi_item_calibration": [
        *TARGETS,
        *(
            f"{m}_{kind}"
            for m in ("vibo_one_prior", "vibo_prior_per_missing", "mfvi")
            for kind in ("coverage_90", "own_coverage_90")
        ),
        "item_uncertainty",
    ],
    "fit_checks_rwa": [*TARGETS, "checks_seconds", "fit_seconds", "items_flagged", "persons_flagged_share"],
    "fit_checks_long_test": [
        *TARGETS,
        "latent_states",
        "items_flagged_share",
        "checks_seconds",
        "coarse_items_flagged_share",
        "coarse_checks_seconds",
        "posterior_seconds",
        "loo_seconds",
    ],
    "ifa_ipip_scale": [
        *TARGETS,
        "iwae_seconds_per_epoch",
        "iwavb",
        "iwavb_to_iwae_time_ratio_per_step",
        "heldout_loglik_per_person_method_independent",
        "peak_rss_gb",
    ],
    "ifa_scaling": [*TARGETS, "per_size", "loglog_slope", "peak_rss_gb"],
    "imputation_model_rwa": [*TARGETS, "numeric", "onehot"],
    "ipip_parse_full_size": [*TARGETS, "peak_rss_gb", "persons_after_preprocessing", "row_counts", "screening"],
    "iwae_grm_8k": [
        *TARGETS,
        "heldout_loglik_per_person_method_independent",
        "loading_rmse",
        "steps",
        "iwae_full_covariance",
    ],
    "iwavb_grm_8k": [*TARGETS, "heldout_loglik_per_person_method_independent", "loading_rmse", "steps"],
    "missingness_mcar": [*TARGETS, "achieved_rate", "identical_on_rerun"],
    "posterior_summaries": ["summary_seconds", "arviz_seconds", "speedup", "max_relative_difference"],
    "program_width": ["fit_step_ms_alone", "fit_step_ms_best", "fit_step_ms_widest", "widest_over_best"],
    "rb_objective_cost": [*TARGETS, "step_ms", "step_ratio_to_zero_fill", "fits"],
    "rb_study_sim": [*TARGETS, "per_objective", "imputation_model", "diagnostic_oracle_exact_marginal", "expectation"],
    "rwa_real": [*TARGETS, "persons", "items", "missing_cells", "reverse_keyed"],
    "script_imports": ["import_seconds_sum", "load_average", "scripts"],
    "vibo_2pl_10k": [
        "vibo_ability_corr",
        "mml_eap_ability_corr",
        "score_new_seconds",
        "refit_new_seconds",
        "heldout_loglik_per_person_vibo_items",
        "compile_seconds",
        "steps",
    ],
    "vibo_scaling": ["seconds_per_epoch_per_100k_persons", "loglog_exponent", "peak_rss_gb", "per_size"],
    "vibo_vs_nuts": [
        "vibo_ability_rmse",
        "nuts_ability_rmse",
        "mfvi_ability_rmse",
        "speedup_vs_nuts",
        "nuts_max_r_hat",
        "compile_seconds",
    ],
}


def smoke_env() -> dict:
    """The test's environment, with XLA's CPU backend at optimization level 0: the smoke run is
    almost all compilation (programs run for milliseconds), which level 0 shortens by a third."""
    flags = re.sub(rf"{runtime.OPTIMIZATION_LEVEL_FLAG}=\d+", "", os.environ.get("XLA_FLAGS", ""))
    return {**os.environ, "XLA_FLAGS": f"{flags} {runtime.OPTIMIZATION_LEVEL_FLAG}=0".strip()}


def test_every_benchmark_case_has_its_figures_listed():
    assert set(FIGURES) == set(bench.available()), (
        "a benchmark case was added or removed: list its headline figures in FIGURES"
    )


# Cases whose smoke run alone takes 20 s or more in CI (two test processes on two cores;
# seconds of a CI run's smoke results): they smoke-run under the slow marker (`make test-all`), so
# that the default run keeps its 30-minute budget. bulk_replications drives Snakemake's block jobs
# for the paper config (216 s; the blocks and the workflow have their own tests), program_width
# times each width in a process of its own (83 s), paper_plan plans the paper config's DAG (51 s),
# and the others fit several small models whose methods the unit and statistical tests fit too
# (23-105 s: rb_study_sim 105, dcm_monotone_seed_design 48, gibbs_vs_nuts_ess 48, iwae_grm_8k 40,
# vibo_2pl_10k 40, dcm_scaling 34, iwavb_grm_8k 33, grm_advi_rwa_size 30, gibbs_2pno_10k100 29,
# gibbs_2pno_1k30 27, imputation_model_rwa 26, ipip_parse_full_size 23, in a CI run of 2026-11-29).
LONG_SMOKE_CASES = (
    "bulk_replications",
    "program_width",
    "rb_objective_cost",
    "uncertainty_calibration",
    "vi_item_calibration",
    "convergence_grid",
    "fit_checks_calibration",
    "dcm_bbvi_seed_design",
    "ifa_ipip_scale",
    "vibo_vs_nuts",
    "rb_study_sim",
    "paper_plan",
    "dcm_monotone_seed_design",
    "gibbs_vs_nuts_ess",
    "iwae_grm_8k",
    "vibo_2pl_10k",
    "dcm_scaling",
    "iwavb_grm_8k",
    "grm_advi_rwa_size",
    "gibbs_2pno_10k100",
    "gibbs_2pno_1k30",
    "imputation_model_rwa",
    "ipip_parse_full_size",
)


def smoke_run(names: list[str]) -> None:
    """Smoke-run ``names`` in one process (imports and JAX's start-up are paid once), then check
    that each wrote its result with its figures."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--smoke", *names],
        cwd=ROOT,
        env=smoke_env(),
        capture_output=True,
        text=True,
        timeout=1800,  # a guard against a hang: the run shares its machine with another test process
    )
    seconds = time.perf_counter() - t0
    table = proc.stdout[proc.stdout.rfind("smoke run, seconds per case") :]
    print(f"benchmark smoke run: {seconds:.0f} s\n{table}")
    assert proc.returncode == 0, f"{proc.stderr[-6000:]}\n{table}"
    for name in names:
        path = bench.SMOKE_OUT / f"{name}.json"
        assert path.exists(), f"{name}: no smoke result at {path}"
        result = json.loads(path.read_text())
        assert result["smoke"] is True and result["case"] == name
        missing = (COMMON | set(FIGURES.get(name, []))) - set(result)
        assert not missing, f"{name}: the smoke result lacks {sorted(missing)}"


def test_the_long_smoke_cases_are_benchmark_cases():
    assert set(LONG_SMOKE_CASES) <= set(bench.available())


def test_every_benchmark_case_smoke_runs():
    smoke_run([name for name in bench.available() if name not in LONG_SMOKE_CASES])


@pytest.mark.slow
def test_the_long_benchmark_cases_smoke_run():
    smoke_run(list(LONG_SMOKE_CASES))
