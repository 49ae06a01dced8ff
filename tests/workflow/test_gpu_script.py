"""The device script for a GPU machine without network (``tools/gpu/run.sh``), on the CPU.

The smoke test does what the GPU machine does, at the test config's size: installs the project
offline from a wheelhouse (here only this project's wheel, built from the checkout; the other
packages come from the test's own environment, as a GPU machine's JAX stack does), into a
target folder put first on ``PYTHONPATH`` of a copy of the tree without ``src/`` (so the code
that runs is the installed wheel's), checks the devices (the CPU allowed), runs a study case and
brings back the page's tables in the layout of ``docs/reproduction/data/<study>/``. The other
tests check the pieces: which wheels the install leaves to the machine, the refusal to run
without a GPU, the benchmark runner's ``--set``, a block's step time, and ``paper_plan``'s GPU
column from a measurement against the hand-computed price.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what the device gets of the tree, less src/ (the wheel brings the package)
TREE = ("Snakefile", "config", "workflow", "notebooks", "environment.yml", "tools", "benchmarks")


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


install = load(ROOT / "tools" / "gpu" / "install_offline.py", "gpu_install_offline")
wheelhouse = load(ROOT / "tools" / "wheelhouse.py", "gpu_test_wheelhouse")
runner = load(ROOT / "benchmarks" / "run.py", "gpu_test_benchmarks_run")
bulk = load(ROOT / "benchmarks" / "cases" / "bulk_replications.py", "gpu_test_bulk_replications")
plan = load(ROOT / "benchmarks" / "cases" / "paper_plan.py", "gpu_test_paper_plan")


def clean_env(**extra) -> dict:
    """This environment without the developer's PYTHONPATH (the checkout's src/ must not be
    what the script imports), on the CPU."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, "JAX_PLATFORMS": "cpu", **extra}


# ---- the offline install --------------------------------------------------------------------


def test_the_install_leaves_jax_and_its_stack_to_the_machine():
    keep = install.installed_closure()
    assert {"jax", "jaxlib", "numpy", "ml-dtypes"} <= keep
    assert "pandas" not in keep and "bayesirt" not in keep
    wheels = [
        Path(n)
        for n in (
            "jax-0.10.2-py3-none-any.whl",
            "jaxlib-0.10.2-cp312-cp312-manylinux_2_27_x86_64.whl",
            "numpy-2.4.6-cp312-cp312-manylinux_2_28_x86_64.whl",
            "ml_dtypes-0.5.4-cp312-cp312-manylinux_2_27_x86_64.whl",
            "pandas-3.1.1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "bayesirt-0.1.0-py3-none-any.whl",
        )
    ]
    chosen, left_out = install.plan(wheels, keep)
    assert [w.name.split("-")[0] for w in chosen] == ["pandas", "bayesirt"]
    assert len(left_out) == 4
    # JAX is never installed from the wheelhouse, even where the machine has none to keep
    assert [w.name.split("-")[0] for w in install.plan(wheels, set())[1]] == ["jax", "jaxlib"]


def fake_wheel(folder: Path, name: str, requires: list[str]) -> Path:
    path = folder / f"{name}-1.0-py3-none-any.whl"
    meta = "Metadata-Version: 2.1\nName: {}\nVersion: 1.0\n{}\nA description: not a header\n".format(
        name, "".join(f"Requires-Dist: {r}\n" for r in requires)
    )
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name}-1.0.dist-info/METADATA", meta + "\nRequires-Dist: in_the_body\n")
    return path


def test_a_runtime_wheelhouse_keeps_what_a_run_needs_and_nothing_it_was_told_to_leave_out(tmp_path):
    fake_wheel(tmp_path, "bayesirt", ["alpha>=1", "beta[x]", 'pytest>=8 ; extra == "test"'])
    fake_wheel(tmp_path, "alpha", ['eps ; python_version < "3.12"'])  # markers other than extras: kept
    fake_wheel(tmp_path, "beta", ['gamma ; extra == "x"', "delta ; extra == 'y'"])
    for name in ("gamma", "delta", "eps", "pytest", "in_the_body"):
        fake_wheel(tmp_path, name, [])
    wheels = sorted(tmp_path.glob("*.whl"))
    assert wheelhouse.runtime_closure(wheels) == {"bayesirt", "alpha", "beta", "gamma", "eps"}
    gone = wheelhouse.prune(tmp_path, runtime_only=True, leave_out=["EPS", "bayesirt"])
    assert sorted(w.name.split("-")[0] for w in gone) == ["delta", "eps", "in_the_body", "pytest"]
    assert sorted(w.name.split("-")[0] for w in tmp_path.glob("*.whl")) == ["alpha", "bayesirt", "beta", "gamma"]


def test_requirement_names_as_pip_compares_them():
    assert install.requirement_name("ml_dtypes>=0.5.0") == "ml-dtypes"
    assert install.requirement_name("Opt.Einsum") == "opt-einsum"
    assert install.requirement_name('jax-cuda13-plugin; extra == "cuda13"') is None
    assert install.wheel_name(Path("tfp_nightly-0.26.0.dev20261027-py2.py3-none-any.whl")) == "tfp-nightly"


def test_the_device_check_refuses_to_run_on_the_cpu():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gpu" / "check_device.py")],
        env=clean_env(PYTHONPATH=str(ROOT / "src")),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 3, proc.stderr
    assert "not on a GPU" in proc.stderr
    assert json.loads(proc.stdout)["backend"] == "cpu"


# ---- the benchmark runner and bulk_replications ----------------------------------------------


def test_benchmark_settings_are_python_literals_and_names_the_case_defines():
    assert runner.parse_settings(["IWAVB_STEPS=None", "REPLICATIONS=100", "DESIGN='normal_p5'"]) == {
        "IWAVB_STEPS": None,
        "REPLICATIONS": 100,
        "DESIGN": "normal_p5",
    }
    with pytest.raises(ValueError, match="NAME=VALUE"):
        runner.parse_settings(["REPLICATIONS"])
    with pytest.raises(ValueError, match="not a Python literal"):
        runner.parse_settings(["DESIGN=normal_p5"])
    module = load(ROOT / "benchmarks" / "cases" / "bulk_replications.py", "gpu_test_bulk_settings")
    with pytest.raises(RuntimeError, match="REPLICATINS"):
        runner.apply_settings("bulk_replications", module, {"REPLICATINS": 100})
    runner.apply_settings("bulk_replications", module, {"IWAVB_REPLICATIONS": 100})
    assert module.IWAVB_REPLICATIONS == 100


def record(size: int, wall: float, steps: int) -> dict:
    return {"block": {"size": size}, "timing": {"block_wall_seconds": wall}, "steps": steps}


def test_a_blocks_step_time_is_its_wall_over_its_longest_fit():
    # one block of three: it stepped until its last fit stopped, at 400 steps
    assert bulk.block_step_seconds([record(3, 2.0, 100), record(3, 2.0, 400), record(3, 2.0, 250)]) == 2.0 / 400
    # today's path: every fit its own block of one; the mean of their step times
    assert bulk.block_step_seconds([record(1, 1.0, 100), record(1, 3.0, 200)]) == pytest.approx((0.01 + 0.015) / 2)


def test_a_snapshot_names_the_device_date_and_command_of_its_result():
    snapshot = load(ROOT / "tools" / "gpu" / "snapshot.py", "gpu_test_snapshot")
    result = {
        "case": "bulk_replications",
        "date": "2026-12-01 10:00 UTC",
        "settings": {"IWAVB_REPLICATIONS": 100, "IWAVB_STEPS": None},
        "device": {"platform": "gpu", "device": "cuda:0", "kind": "NVIDIA H100 80GB HBM3"},
        "cpu_count": 16,
        "versions": {"jax": "0.11.2", "jaxlib": "0.11.2", "python": "3.12.3"},
    }
    snap = snapshot.snapshot(result)
    assert snap["date"] == "2026-12-01 10:00 UTC" and snap["result"] is result
    assert snap["machine"] == "NVIDIA H100 80GB HBM3 (gpu), 16 CPU cores"
    settings = "--set IWAVB_REPLICATIONS=100 --set IWAVB_STEPS=None"
    assert snap["command"] == f"python benchmarks/run.py bulk_replications {settings}"
    assert snap["lock"] == "JAX 0.11.2 (jaxlib 0.11.2), Python 3.12.3"
    assert snapshot.snapshot({**result, "smoke": True, "settings": {}})["command"].endswith("--smoke bulk_replications")


# ---- paper_plan's GPU column ------------------------------------------------------------------


def gpu_snapshot(path: Path, platform: str = "cuda") -> Path:
    def method(reps, eval_seconds):
        return {"replications": reps, "bulk": {"eval_seconds_per_replication": eval_seconds}}

    result = {
        "case": "bulk_replications",
        "fits_device": f"{platform} (NVIDIA H100 80GB HBM3)",
        "iwae_block_step_seconds": 0.0002,
        "iwavb_block_step_seconds": 0.0005,
        "iwae": method(100, 0.05),
        "iwavb": method(100, 0.07),
        "sizes": {"design": "normal_p5", "n_persons": 500},
    }
    snap = {"date": "2026-12-01 10:00 UTC", "machine": "NVIDIA H100 80GB HBM3 (gpu), 16 CPU cores"}
    path.write_text(json.dumps({**snap, "command": "x", "lock": "JAX 0.11.2", "result": result}))
    return path


def test_paper_plan_reads_a_gpu_measurement_and_only_a_gpus(tmp_path):
    assert plan.gpu_measurements(tmp_path / "absent.json") is None
    assert plan.gpu_measurements(gpu_snapshot(tmp_path / "cpu.json", platform="cpu")) is None
    measured = plan.gpu_measurements(gpu_snapshot(tmp_path / "gpu.json"))
    assert measured["step_seconds"] == {"iwae": 0.0002, "iwavb": 0.0005}
    assert measured["date"].startswith("2026-12-01") and "H100" in measured["machine"]
    paper = plan.validated(plan.paper_config())
    # the 500-person, batch-32 designs are the measured size; the 5,000-person one is not
    assert plan.measured_on_gpu(measured, paper, "amortized_ifa", "normal_p5", "iwavb")
    assert plan.measured_on_gpu(measured, paper, "amortized_ifa", "mixture_p1", "iwae")
    assert not plan.measured_on_gpu(measured, paper, "amortized_ifa", "mixture_p3", "iwae")
    assert not plan.measured_on_gpu(measured, paper, "vibo", "n1k", "vibo")
    assert not plan.measured_on_gpu(None, paper, "amortized_ifa", "normal_p5", "iwae")


def test_paper_plans_gpu_hours_say_whether_they_are_measured(tmp_path):
    # a probe of one design and method: normal_p5's IWAE, stopped by the probe's cap
    probe = {
        "fixed_seconds_per_job": 3.0,
        "fits": [
            {
                "study": "amortized_ifa",
                "design": "normal_p5",
                "method": "iwae",
                "steps": 300,
                "converged": False,
                "fit_seconds": 0.3,
                "eval_seconds": 1.0,
                "block_size": 2,
            }
        ],
    }
    measured = plan.gpu_measurements(gpu_snapshot(tmp_path / "gpu.json"))
    predicted, from_gpu = plan.predict(probe, None), plan.predict(probe, measured)
    ifa = from_gpu["amortized_ifa"]
    fits = ifa["fits_gpu_measured"]
    assert fits > 0 and predicted["amortized_ifa"]["fits_gpu_measured"] == 0
    # by hand: each measured fit's GPU seconds change by its evaluation and its steps' price
    paper = plan.validated(plan.paper_config())
    design = paper["studies"]["amortized_ifa"]["designs"]["normal_p5"]
    steps, block = design["training"]["max_steps"], design["block_size"]
    per_fit = (0.05 - 1.0) + (0.0002 - plan.GPU_STEP_SECONDS) * steps / block
    expected = predicted["amortized_ifa"]["hours_gpu_after"] + fits * per_fit / 3600
    assert ifa["hours_gpu_after"] == pytest.approx(expected, abs=0.051)  # both rounded to 0.1 h
    # the CPU columns do not move
    assert ifa["hours_2_cores_after"] == predicted["amortized_ifa"]["hours_2_cores_after"]
    # only the probed design and method are priced here, and all of them from the measurement
    n_priced = sum(s["fits"] - s["fits_not_priced"] for s in from_gpu.values())
    assert n_priced == fits
    are, basis = plan.gpu_basis(measured, fits, n_priced)
    assert are == "measured" and "H100" in basis and "2026-12-01" in basis
    are, basis = plan.gpu_basis(measured, fits, n_priced + 1)
    assert are == "partly measured" and basis.endswith("(an assumption, not measured here)")
    are, basis = plan.gpu_basis(None, 0, n_priced)
    assert are == "predicted" and basis.startswith("predicted: no GPU measurement")


# ---- the script itself, at smoke size ---------------------------------------------------------


def project_wheelhouse(dest: Path) -> Path:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "wheelhouse.py"), "--dest", str(dest), "--project-only"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert [w.name for w in dest.glob("*.whl")] == ["bayesirt-0.1.0-py3-none-any.whl"]
    return dest


def device_tree(dest: Path) -> Path:
    dest.mkdir()
    for name in TREE:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, dest / name)
    return dest


def run_script(tree: Path, wheelhouse: Path, out: Path, cases: str, **extra) -> subprocess.CompletedProcess:
    env = clean_env(OUT=str(out), WHEELHOUSE=str(wheelhouse), PYTHON=sys.executable, CASES=cases, CORES="2", **extra)
    return subprocess.run(
        ["bash", str(tree / "tools" / "gpu" / "run.sh"), "--smoke"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=5400,  # the slow test's bulk_replications alone took 19 min on a busy 2-core machine
    )


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name.removeprefix("./"): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


@pytest.fixture(scope="module")
def wheelhouse_of_the_project(tmp_path_factory) -> Path:
    return project_wheelhouse(tmp_path_factory.mktemp("gpu") / "wheelhouse")


def test_the_device_script_installs_offline_and_brings_back_a_studys_tables(tmp_path, wheelhouse_of_the_project):
    wheelhouse = wheelhouse_of_the_project
    tree, out = device_tree(tmp_path / "tree"), tmp_path / "out"
    # one method, to keep CI's cost down (the slow test below runs both, and every case)
    (tree / "config" / "iwae_only.yaml").write_text("studies:\n  amortized_ifa:\n    methods: [iwae]\n")
    proc = run_script(tree, wheelhouse, out, "ifa_mixture_p1", STUDY_CONFIGS="config/test.yaml config/iwae_only.yaml")
    log = (out / "run.log").read_text() if (out / "run.log").exists() else proc.stdout
    assert proc.returncode == 0, log[-6000:] + proc.stderr[-2000:]
    assert sorted(p.name for p in out.iterdir()) == [
        "cases.tsv",
        "logs.tar.gz",
        "records.tar.gz",
        "run.log",
        "study_tables.tar.gz",
    ]
    # the package that ran is the offline install's, not a checkout's
    device = json.loads(log[log.index("{\n") : log.index("\n}") + 2])
    assert device["backend"] == "cpu" and "/site/bayesirt/" in device["bayesirt"]
    rows = list(csv.DictReader(io.StringIO((out / "cases.tsv").read_text()), delimiter="\t"))
    assert [(r["case"], r["status"]) for r in rows] == [("ifa_mixture_p1", "ok")]
    tables = members(out / "study_tables.tar.gz")
    prefix = "ifa_mixture_p1/amortized_ifa/"
    assert {f"{prefix}mixture_p1/fits.csv", f"{prefix}mixture_p1/timings.csv", f"{prefix}run.json"} <= set(tables)
    assert not any("/normal/" in name for name in tables)
    fits = list(csv.DictReader(io.StringIO(tables[f"{prefix}mixture_p1/fits.csv"].decode())))
    assert [r["method"] for r in fits] == ["iwae"] and int(fits[0]["rep"]) == 0
    run = json.loads(tables[f"{prefix}run.json"])
    assert run["designs"] == ["mixture_p1"] and run["config"] == "config/test.yaml config/iwae_only.yaml"
    assert "cpu" in run["machine"] and run["elapsed_seconds"] > 0
    assert str(tmp_path) not in run["command"] + run["sittings"][0]["command"]  # no machine paths
    assert any(name.startswith("case_logs/ifa_mixture_p1.log") for name in members(out / "logs.tar.gz"))


def test_a_case_past_its_time_limit_is_stopped_reported_and_cleaned_up(tmp_path, wheelhouse_of_the_project):
    tree, out = device_tree(tmp_path / "tree"), tmp_path / "out"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = run_script(
        tree,
        wheelhouse_of_the_project,
        out,
        "ifa_mixture_p1 no_such_case",
        TIMEOUT_ifa_mixture_p1="2",
        TMPDIR=str(scratch),
    )
    assert proc.returncode == 1, proc.stdout[-3000:]
    rows = list(csv.DictReader(io.StringIO((out / "cases.tsv").read_text()), delimiter="\t"))
    assert [(r["case"], r["status"]) for r in rows] == [("ifa_mixture_p1", "timed out"), ("no_such_case", "unknown")]
    assert int(rows[0]["seconds"]) < 30
    assert "unknown case no_such_case" in (out / "run.log").read_text()
    assert list(scratch.iterdir()) == []  # the run's own folder, and whatever the case left there, are gone


@pytest.mark.slow
def test_the_device_script_runs_every_case_at_smoke_size(tmp_path, wheelhouse_of_the_project):
    tree, out = device_tree(tmp_path / "tree"), tmp_path / "out"
    proc = run_script(tree, wheelhouse_of_the_project, out, "bulk_replications ifa_normal_p5 ifa_mixture_p1")
    log = (out / "run.log").read_text()
    assert proc.returncode == 0, log[-6000:]
    rows = list(csv.DictReader(io.StringIO((out / "cases.tsv").read_text()), delimiter="\t"))
    assert [r["status"] for r in rows] == ["ok", "ok", "ok"]
    snapshot = json.loads((out / "gpu_bulk_replications.json").read_text())
    assert {"date", "machine", "command", "lock", "result"} <= set(snapshot)
    result = snapshot["result"]
    assert result["fits_device"].startswith("cpu")
    assert result["iwae_bulk_over_one_fit"] > 0 and result["iwavb_block_step_seconds"] > 0
    # a CPU measurement is never taken for a GPU's
    assert plan.gpu_measurements(out / "gpu_bulk_replications.json") is None
    tables = members(out / "study_tables.tar.gz")
    for case, design in (("ifa_normal_p5", "normal"), ("ifa_mixture_p1", "mixture_p1")):
        fits = list(csv.DictReader(io.StringIO(tables[f"{case}/amortized_ifa/{design}/fits.csv"].decode())))
        assert {r["method"] for r in fits} == {"iwae", "iwavb"}
