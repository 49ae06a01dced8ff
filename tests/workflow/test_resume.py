"""Resuming after a hard interruption: `make run` is killed mid-way (SIGKILL to the whole process
group, as a lost terminal or kill -9 leaves it), and the same command run again finishes the
workflow with no extra flags, rebuilds what the killed jobs left half-written, and gives the
same files, bit for bit, as a run that was never interrupted.

The part of the test config run here is a chain of rb_imputation's jobs (data, reference fit and
its table, missingness and imputation model of both replications, and two objectives' blocks:
nine jobs), so that the kill lands between fits and the test stays short. The run that was
never interrupted is the session's full run of the test config (conftest.local_run), which holds
these jobs' files too."""

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.workflow

BLOCKS = [f"results/rb_imputation/rwa_sim/mcar15/{c}/blocks/block0" for c in ("zero_fill", "naive_average_M2")]
TARGETS = ["results/rb_imputation/rwa_sim/recovery.csv", *BLOCKS]
# the targets' files: the recovery table, and replication 0's fit in each block
TARGET_FILES = [TARGETS[0], *(f"{block}/rep0/fit.json" for block in BLOCKS)]
# the workflow's files, and the Makefile whose `run` target is the command under test
FILES = ("Snakefile", "config", "workflow", "notebooks", "environment.yml", "Makefile")


def copy_of_workflow(dest: Path) -> Path:
    dest.mkdir()
    for name in FILES:
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest / name)
    return dest


def make_run(folder: Path, env: dict, **popen) -> subprocess.Popen:
    """The README's `make run` on the test config's targets, with this interpreter's environment
    (-o: the environment is taken as installed, not rebuilt)."""
    venv = Path(sys.prefix)
    args = ["--configfile", "config/test.yaml", "--cores", "2", *TARGETS]
    return subprocess.Popen(
        [
            "make",
            "--no-print-directory",
            "-o",
            str(venv / ".installed"),
            "run",
            f"VENV={venv}",
            f"ARGS={' '.join(args)}",
        ],
        cwd=folder,
        env={**os.environ, **env},
        text=True,
        **popen,
    )


def incomplete_outputs(folder: Path) -> list[Path]:
    """Outputs of the jobs that were running: Snakemake marks each one before its job starts
    (a file named by the urlsafe base64 of the path, long names split into "@" folders)."""
    marks = folder / ".snakemake" / "incomplete"
    out = []
    for mark in marks.rglob("*") if marks.is_dir() else []:
        if mark.is_file() and mark.name != "migration_underway":
            code = "".join(part.removeprefix("@") for part in mark.relative_to(marks).parts)
            out.append(Path(base64.urlsafe_b64decode(code).decode()))
    return out


def locked(folder: Path) -> bool:
    locks = folder / ".snakemake" / "locks"
    return locks.is_dir() and any(locks.iterdir())


def result_files(folder: Path) -> list[Path]:
    return sorted(
        p.relative_to(folder) for sub in ("results", "data") for p in (folder / sub).rglob("*") if p.is_file()
    )


def same_content(a: Path, b: Path) -> bool:
    if a.name.startswith("timings"):  # wall times
        return True
    if a.suffix == ".json":  # fit and imputation records: all but the timing field
        strip = lambda p: {k: v for k, v in json.loads(p.read_text()).items() if k != "timing"}
        return strip(a) == strip(b)
    return a.read_bytes() == b.read_bytes()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_run_resumes_after_kill_9(tmp_path, local_run, compilation_cache):
    run = copy_of_workflow(tmp_path / "killed")
    # its own process group, so that the kill takes make, Snakemake and every running job at once
    proc = make_run(
        run, compilation_cache, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        # mid-way: at least one fit done and a job running
        if any((run / "results").rglob("fit.json")) and incomplete_outputs(run):
            break
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    interrupted = incomplete_outputs(run)
    assert interrupted and locked(run)
    # what a job killed while writing leaves behind: a truncated file where its output goes, or
    # inside it where the output is a folder its job had begun to fill (a block of fits)
    for rel in interrupted:
        cut_off = run / rel / "half-written" if (run / rel).is_dir() else run / rel
        cut_off.parent.mkdir(parents=True, exist_ok=True)
        cut_off.write_text("half-written")
    # what the kill left complete: files outside the cut-off outputs (inside a cut-off folder,
    # even a finished file goes with the folder, and a temporary one of an atomic write may lie)
    done_before = {rel for rel in result_files(run) if not any(rel == cut or cut in rel.parents for cut in interrupted)}

    proc = make_run(run, compilation_cache, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.communicate()[0]
    assert proc.returncode == 0, out[-3000:]
    assert "lock left by an interrupted run" in out
    assert not incomplete_outputs(run) and not locked(run)

    # every file of the resumed run is the uninterrupted run's, bit for bit (timings excepted),
    # the targets and the outputs the kill cut off among them
    files = result_files(run)
    rebuilt = {rel for rel in interrupted if (run / rel).is_file() or (run / rel).is_dir()}
    assert set(TARGET_FILES) <= {str(rel) for rel in files} and rebuilt == set(interrupted) and done_before < set(files)
    assert set(files) <= set(result_files(local_run)), set(files) - set(result_files(local_run))
    different = [str(rel) for rel in files if not same_content(local_run / rel, run / rel)]
    assert not different


def test_lock_of_a_live_run_is_left_alone(tmp_path):
    # a lock, and a process of this folder that is a Snakemake run (a stand-in that sleeps):
    # the lock must stay, the run be named, and the exit status say so
    (tmp_path / ".snakemake" / "locks").mkdir(parents=True)
    (tmp_path / ".snakemake" / "locks" / "0.output.lock").write_text("results/x\n")
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "snakemake"], cwd=tmp_path)
    try:
        proc = subprocess.run(
            [sys.executable, str(ROOT / "workflow" / "unlock_if_stale.py")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
    finally:
        live.kill()
        live.wait()
    assert proc.returncode == 1 and f"pid {live.pid}" in proc.stderr
    assert locked(tmp_path)
