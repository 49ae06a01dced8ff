"""The SLURM profile names every model-fitting rule with what a cluster job needs.

A fitting rule is a rule named ``fit_<what is fitted>`` (workflow/rules/common.smk says so);
the rule list comes from ``snakemake --list-rules``, so a new study's fits are checked as soon
as its rule file is included."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PROFILE = ROOT / "workflow" / "profiles" / "slurm" / "config.yaml"
NEEDED = ("runtime", "mem_mb", "cpus_per_task", "gpu")
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def rules() -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--list-rules"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    names = [line.strip() for line in proc.stdout.splitlines() if re.fullmatch(r"\s*\w+\s*", line)]
    assert "all" in names, proc.stdout
    return names


@pytest.fixture(scope="module")
def profile() -> dict:
    return yaml.safe_load(PROFILE.read_text())


def fitting_rules(names):
    return [name for name in names if name.startswith("fit_")]


def missing_settings(name: str, profile: dict) -> list[str]:
    resources = (profile.get("set-resources") or {}).get(name) or {}
    missing = [key for key in NEEDED if key not in resources]
    if resources.get("gpu", 0) < 1:
        missing.append("gpu >= 1")
    threads = (profile.get("set-threads") or {}).get(name)
    if not threads or threads != resources.get("cpus_per_task"):
        missing.append("set-threads equal to cpus_per_task")
    return missing


def test_every_fitting_rule_has_runtime_memory_cpus_threads_and_a_gpu(rules, profile):
    fits = fitting_rules(rules)
    assert {"fit_reference", "fit_imputation_model", "fit_objective", "fit_amortized_ifa"} <= set(fits)
    problems = {name: missing_settings(name, profile) for name in fits}
    assert not any(problems.values()), {k: v for k, v in problems.items() if v}


def test_fitting_rules_follow_the_naming_convention(rules):
    # a rule called e.g. `gibbs_fit` would escape the fit_* check above: name it fit_gibbs
    stray = [name for name in rules if re.search(r"(^|_)fits?(_|$)", name) and not name.startswith("fit_")]
    assert not stray, f"fitting rules must be named fit_<what>: {stray}"


def test_profile_names_only_rules_that_exist(rules, profile):
    named = set(profile.get("set-resources") or {}) | set(profile.get("set-threads") or {})
    assert named <= set(rules), sorted(named - set(rules))


def test_the_check_catches_a_fitting_rule_without_settings(profile):
    assert missing_settings("fit_something_new", profile)
    reduced = yaml.safe_load(PROFILE.read_text())
    del reduced["set-resources"]["fit_objective"]["gpu"]
    assert missing_settings("fit_objective", reduced) == ["gpu", "gpu >= 1"]
