"""A study added the way docs/contributing.md says (a package, its name in STUDIES, a schema
block, a rule file of registrations, its scripts and a notebook) runs through the template rules
of workflow/rules/study.smk: its data, block-fitting and tables jobs are the template's, its fits
lie in their blocks' folders, and its report is planned like every study's.

The toy study (tests/workflow/toy_study/) estimates the mean of normal data by the sample mean
and median; seed 5, 40 draws per replication: every estimate within 4 standard errors of the
truth (1/sqrt(40) for the mean, 1.2533/sqrt(40) for the median, asymptotically); one fails by
chance with probability about 6e-5, so the 12 fits together below 1e-3."""

import base64
import json
import re
import shutil

import pandas as pd
import pytest
import yaml

from tests.workflow.runs import ROOT, snakemake

pytestmark = pytest.mark.workflow
TOY = ROOT / "tests" / "workflow" / "toy_study"


def add_toy_study(run):
    """A copy of the workflow and the package source with the toy study added."""
    for name in ("Snakefile", "workflow", "notebooks", "environment.yml"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, run / name)
    shutil.copytree(ROOT / "src", run / "src", ignore=shutil.ignore_patterns("__pycache__"))
    # the package and its name in STUDIES
    shutil.copytree(TOY / "package", run / "src" / "bayesirt" / "studies" / "toy")
    init = run / "src" / "bayesirt" / "studies" / "__init__.py"
    text, n = re.subn(r"STUDIES = \((.*?)\)", r'STUDIES = (\1, "toy")', init.read_text(), count=1)
    assert n == 1
    init.write_text(text)
    # the schema block
    schema_path = run / "workflow" / "schemas" / "config.schema.yaml"
    schema = yaml.safe_load(schema_path.read_text())
    schema["properties"]["studies"]["properties"]["toy"] = {
        "type": "object",
        "additionalProperties": False,
        "required": ["designs"],
        "properties": {
            "enabled": {"type": "boolean", "default": True},
            "replications": {"type": "integer", "minimum": 1, "default": 3},
            "block_size": {"type": "integer", "minimum": 1, "default": 2},
            "designs": {"type": "object"},
        },
    }
    schema_path.write_text(yaml.safe_dump(schema, sort_keys=False))
    # the rule file, the scripts and the notebook
    shutil.copy(TOY / "toy.smk", run / "workflow" / "rules" / "toy.smk")
    for script in (TOY / "scripts").glob("*.py"):
        shutil.copy(script, run / "workflow" / "scripts" / script.name)
    shutil.copy(TOY / "notebook.py", run / "notebooks" / "toy.py")
    # the schema asks for a data set; the toy study reads none, so no job makes it
    config = {
        "seed": 5,
        "datasets": {"unused": {"source": "simulate", "preset": "rwa", "n_persons": 10}},
        "studies": {"toy": {"designs": {"low": {"mean": -1.0, "n": 40}, "high": {"mean": 2.0, "n": 40}}}},
    }
    (run / "toy.yaml").write_text(yaml.safe_dump(config))
    return {"PYTHONPATH": str(run / "src")}


def test_a_toy_study_runs_through_the_template_rules(tmp_path):
    env = add_toy_study(tmp_path)
    rules = snakemake("--list-rules", "--configfile", "toy.yaml", cwd=tmp_path, env=env).stdout.split()
    assert {"toy_simulate", "fit_toy", "toy_tables"} <= set(rules)

    plan = snakemake("-n", "--configfile", "toy.yaml", cwd=tmp_path, env=env).stdout
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", plan, re.M))
    # 2 designs x 3 replications of data; 2 designs x 2 methods x 2 blocks (block_size 2 of 3)
    assert counts["toy_simulate"] == "6" and counts["fit_toy"] == "8" and counts["toy_tables"] == "2", plan
    assert counts["report_notebook"] == "1", plan

    snakemake(
        "results/toy/low/summary.csv",
        "results/toy/high/summary.csv",
        "--cores",
        "2",
        "--configfile",
        "toy.yaml",
        cwd=tmp_path,
        env=env,
    )
    for design, mean in (("low", -1.0), ("high", 2.0)):
        summary = pd.read_csv(tmp_path / f"results/toy/{design}/summary.csv")
        assert sorted(zip(summary["method"], summary["rep"])) == [(m, r) for m in ("mean", "median") for r in range(3)]
        assert (summary["truth"] == mean).all()
        se = 1.0 / 40**0.5 * summary["method"].map({"mean": 1.0, "median": 1.2533})
        assert ((summary["estimate"] - mean).abs() < 4 * se).all(), summary
    # each fit in its block's folder: blocks of replications (0, 1) and (2,)
    assert (tmp_path / "results/toy/low/mcar0/mean/blocks/block0/rep1/fit.json").is_file()
    assert (tmp_path / "results/toy/low/mcar0/mean/blocks/block1/rep2/fit.json").is_file()
    assert (tmp_path / "logs/benchmarks/toy/low/mcar0/mean/block1.tsv").is_file()
    # the code Snakemake records for its rerun trigger is the rule's own script, spelled out as a
    # study file would write it (the template's shared expression would be one text for all)
    for output, script in (
        ("results/toy/low/mcar0/mean/blocks/block0", "toy_fit.py"),
        ("results/toy/low/summary.csv", "toy_tables.py"),
    ):
        record = tmp_path / ".snakemake" / "metadata" / base64.b64encode(output.encode()).decode()
        assert json.loads(record.read_text())["code"] == f'        "../scripts/{script}"\n'
