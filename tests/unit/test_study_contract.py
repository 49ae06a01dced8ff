"""Every study keeps the contract of bayesirt.studies.base: the same modules, a registry whose
methods return MethodResult, conditions of the test config in the study's result folder, and
settings checks that pass on the shipped configs."""

import dataclasses
import importlib
import inspect
import pkgutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from snakemake.utils import validate

from bayesirt import records
from bayesirt.studies import STUDIES, base, check_config, design_conditions

ROOT = Path(__file__).resolve().parents[2]
MODULES = {"conditions", "settings", "data", "methods", "tables", "figures", "reproduction"}
# seed_methods: a study's methods as its seed states them (issue 45); oracle: dcm_bbvi's reference
# accuracy at the true parameters, and reference_methods: vibo's MML and NUTS, kept apart so that
# methods stays under 400 lines; reproduction_figures: amortized_ifa's page figures, kept apart
# so that reproduction stays under 400, and reproduction_pairs: the fits paired by replication that
# both of those read; seed_numbers: how a study's figures answer the numbers its seed reports (issue 46);
# diagnostics: fits beside the run's that tell the seed's method from this implementation (issue 46);
# gradient_samples: vibo's diagnostic of its seed's one number, and doubling: amortized_ifa's
# doubling check, and diagnostics_section: rb_imputation's page section of its diagnostics, each
# kept apart so that diagnostics stays under 400 lines
OPTIONAL = {
    "diagnostics",
    "diagnostics_section",
    "doubling",
    "gradient_samples",
    "evaluation",
    "seed_methods",
    "oracle",
    "reference_methods",
    "reproduction_figures",
    "reproduction_pairs",
    "seed_numbers",
}


def validated(name: str) -> dict:
    config = yaml.safe_load((ROOT / "config" / name).read_text())
    validate(config, str(ROOT / "workflow" / "schemas" / "config.schema.yaml"), set_default=True)
    return config


def test_the_studies_are_the_packages_under_studies():
    packages = {m.name for m in pkgutil.iter_modules(importlib.import_module("bayesirt.studies").__path__) if m.ispkg}
    assert packages == set(STUDIES)


@pytest.mark.parametrize("name", STUDIES)
def test_a_study_has_the_contract_modules_and_entry_points(name):
    package = importlib.import_module(f"bayesirt.studies.{name}")
    assert MODULES <= {m.name for m in pkgutil.iter_modules(package.__path__)} <= MODULES | OPTIONAL
    assert package.__doc__ and len(package.__doc__) > 200  # what it compares, and how
    study = base.load(name)
    assert study.name == name
    for entry in (study.conditions, study.fit, study.aggregate, study.figures):
        assert callable(entry)
    # the replications of a condition fitted as one block (inference.execution.bulk), each evaluated alike
    # with one signature in every study: the block's replications and the study's settings (and,
    # for a diagnostic's variant, keyword-only options with defaults that the workflow never sets)
    fit_block = importlib.import_module(f"bayesirt.studies.{name}.methods").fit_block
    signature = inspect.signature(fit_block)
    assert list(signature.parameters)[:2] == ["reps", "settings"], name
    options = list(signature.parameters.values())[2:]
    assert all(p.kind is p.KEYWORD_ONLY and p.default is not p.empty for p in options), name
    assert signature.parameters["settings"].annotation in ("Settings", "settings.Settings"), name
    assert signature.return_annotation == "list[MethodResult]", name
    # and one shape of replication: its data, then its condition (``cond``) and its seed
    replication = importlib.import_module(f"bayesirt.studies.{name}.methods").Replication
    fields = {f.name: f.type for f in dataclasses.fields(replication)}
    assert list(fields)[-2:] == ["cond", "seed"] and fields["cond"] == "Condition", name
    conditions = importlib.import_module(f"bayesirt.studies.{name}.conditions")
    assert conditions.STUDY == name
    # every method a config may name has a function, and every function says it returns MethodResult
    assert set(conditions.METHODS) <= set(study.methods)
    for method, function in study.methods.items():
        assert inspect.signature(function).return_annotation in ("MethodResult", base.MethodResult), method


@pytest.mark.parametrize("name", STUDIES)
def test_a_study_spells_its_condition_and_its_settings_as_every_other_does(name):
    # one condition type, ``conditions.Condition``, and one settings type, ``settings.Settings``,
    # built once from the validated config, which the methods read (issue 48: FitSpec, Fit,
    # StudySettings and the methods' StudyConfig mirrors of the schema are gone)
    conditions = importlib.import_module(f"bayesirt.studies.{name}.conditions")
    settings = importlib.import_module(f"bayesirt.studies.{name}.settings")
    config = validated("test.yaml")
    fits = conditions.conditions(config)
    assert any(isinstance(fit, conditions.Condition) for fit in fits)
    assert isinstance(settings.Settings.from_config(config), settings.Settings)
    methods = importlib.import_module(f"bayesirt.studies.{name}.methods")
    for gone in ("FitSpec", "Fit", "StudySettings", "StudyConfig"):
        assert not any(hasattr(module, gone) for module in (conditions, settings, methods)), gone


@pytest.mark.parametrize("name", STUDIES)
def test_the_test_config_conditions_are_in_the_study_folder(name):
    config = validated("test.yaml")
    fits = base.load(name).conditions(config)
    assert fits, f"config/test.yaml asks {name} for no fit"
    methods = base.load(name).methods
    for fit in fits:
        assert fit.folder.startswith(f"results/{name}/"), fit.folder
        assert fit.method in methods, fit
    assert len({fit.folder for fit in fits}) == len(fits)  # one folder per fit


@pytest.mark.parametrize("name", STUDIES)
def test_every_fit_of_a_block_lies_in_its_own_folder_of_one_block_of_its_condition(name):
    # the block contract the workflow reads (condition_blocks(config, fit), design_conditions.fit_folder):
    # on the paper config, each fit made in a block is in exactly one block of its condition, its
    # folder is rep<r>/ of that block's, and no two fits share a folder
    config = validated("paper.yaml")
    conditions = importlib.import_module(f"bayesirt.studies.{name}.conditions")
    folders = set()
    for fit in conditions.conditions(config):
        if not hasattr(fit, "block_folder") or fit.rep is None:
            continue  # a fit made alone (rb_imputation's reference, gibbs_2pno's mixture)
        blocks = conditions.condition_blocks(config, fit)
        assert sum(fit.rep in reps for reps in blocks) == 1, fit
        folder = design_conditions.fit_folder(conditions, config, fit)
        assert folder.startswith(fit.block_folder(design_conditions.block_number(conditions, config, fit))), folder
        assert folder.endswith(f"/rep{fit.rep}") and folder not in folders, folder
        folders.add(folder)
    assert folders, f"config/paper.yaml asks {name} for no fit in a block"


@pytest.mark.parametrize("config", ["config.yaml", "test.yaml", "paper.yaml"])
def test_the_shipped_configs_pass_every_study_check(config):
    check_config(validated(config))


def test_method_result_splits_items_from_abilities_and_is_what_the_writer_writes(tmp_path):
    estimates = pd.DataFrame(
        {
            "parameter": ["discrimination", "ability", "loading", "ability"],
            "item": [0, None, 1, None],
            "person": [None, 0, -1, 1],
            "mean": [1.0, 0.1, 0.5, -0.2],
        }
    )
    result = base.MethodResult({"method": "x", "timing": {"wall_seconds": 1.5}}, estimates)
    assert list(result.items["parameter"]) == ["discrimination", "loading"]
    assert list(result.abilities["person"]) == [0, 1]
    assert result.timing == {"wall_seconds": 1.5}
    records.write_fit(result, tmp_path)
    assert (tmp_path / "fit.json").exists() and (tmp_path / "estimates.csv").exists()
    assert not (tmp_path / "loss.csv").exists()  # no loss history, no file
