"""tools/reproduction.py's sittings: pause and resume reach every process of a running sitting and
are recorded in it, and collect refuses a study whose jobs ran during a pause (their times hold it)."""

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tool(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("reproduction_tool", ROOT / "tools" / "reproduction.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    return module


def state(pid: int) -> str:
    """The kernel's one-letter state of a process (T: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="reads process states from /proc (Linux)")
def test_pause_stops_the_running_sittings_process_group_and_resume_records_the_pause(tool):
    # a stand-in for make and its jobs: a shell and its child, in their own process group
    proc = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True)
    try:
        time.sleep(0.3)
        child = int(subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()[0])
        sitting = {"studies": ["x"], "argv": "python tools/reproduction.py run x", "start": tool.now()}
        done = {"studies": ["y"], "argv": "python tools/reproduction.py run y", "start": "2026-01-01T00:00:00Z"}
        running = {**sitting, "process_group": proc.pid, "end": None}
        tool.write_sittings([{**done, "end": "2026-01-01T01:00:00Z"}, running])

        assert tool.pause(None) == 0
        time.sleep(0.2)
        assert state(proc.pid) == "T" and state(child) == "T"
        assert tool.pause(None) == 0  # already paused: said, not paused twice
        record = tool.read_sittings()[1]
        assert len(record["pauses"]) == 1 and record["pauses"][0][1] is None
        assert "pauses" not in tool.read_sittings()[0]  # a finished sitting is left alone

        assert tool.resume(None) == 0
        time.sleep(0.2)
        assert state(proc.pid) != "T" and state(child) != "T"
        record = tool.read_sittings()[1]
        assert record["pauses"][0][1] is not None and record["paused_seconds"] >= 0
        assert tool.resume(None) == 1  # nothing paused any more
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for _ in range(50):  # until init has reaped the orphaned child too
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    assert tool.pause(None) == 1  # the sitting's processes are gone: nothing to pause


def test_collect_refuses_a_study_whose_jobs_ran_during_a_pause(tool, tmp_path):
    bench = tmp_path / "logs" / "benchmarks" / "demo"
    bench.mkdir(parents=True)
    header = "s\th:m:s\tmax_rss\n"
    ends = {"before.tsv": 1_000.0, "during.tsv": 2_000.0, "spans.tsv": 3_500.0, "after.tsv": 5_000.0}
    for name, end in ends.items():
        (bench / name).write_text(header + "100.0\t0:01:40\t1\n")
        os.utime(bench / name, (end, end))

    def iso(t):
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

    # paused from 1,950 to 2,500 (within the job that ends at 2,000) and from 3,450 to 3,600 (across
    # the end of the job that ends at 3,500); the jobs that end at 1,000 and 5,000 ran outside both
    sitting = {"pauses": [[iso(1_950), iso(2_500)], [iso(3_450), iso(3_600)]]}
    assert tool.paused_jobs("demo", [sitting]) == [
        "logs/benchmarks/demo/during.tsv",
        "logs/benchmarks/demo/spans.tsv",
    ]
    assert tool.paused_jobs("demo", [{}]) == []  # a sitting never paused


def test_the_tool_lists_pause_and_resume():
    out = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "reproduction.py"), "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "pause" in out and "resume" in out


def test_run_puts_first_studies_and_first_files_before_the_rest(tool):
    command = tool.run_command(
        ["amortized_ifa"], ["config/paper.yaml", "extra.yaml"], ["vibo", "results/amortized_ifa/ipip/summary.csv"]
    )
    assert command[:2] == ["make", "run"]
    assert command[2] == (
        "ARGS=results/reports/amortized_ifa.html --configfile config/paper.yaml extra.yaml"
        " --prioritize results/reports/vibo.html results/amortized_ifa/ipip/summary.csv"
    )
    assert "--prioritize" not in tool.run_command(["vibo"], ["config/paper.yaml"])[2]


def test_the_block_jobs_resumed_from_a_checkpoint_are_named(tool, tmp_path):
    import json

    for block, step in (("d/m/blocks/block0", 0), ("d/m/blocks/block1", 4500), ("e/m/blocks/block0", None)):
        for rep in ("rep0", "rep1"):
            folder = tmp_path / "results" / "study" / block / rep
            folder.mkdir(parents=True)
            timing = {"wall_seconds": 1.0} | ({} if step is None else {"block_resumed_at_step": step})
            (folder / "fit.json").write_text(json.dumps({"steps": 10, "timing": timing}))
    assert tool.resumed_blocks("study") == ["d/m/blocks/block1"]
    assert tool.resumed_blocks("other") == []


def test_the_run_section_says_which_jobs_count_their_last_sitting_only():
    from bayesirt.studies import reproduction

    run = {"job_seconds": 7200.0, "sittings": [], "resumed_blocks": ["d/m/blocks/block1"]}
    assert "1 block job(s) resumed from a checkpoint count their last sitting only" in reproduction.run_section(run)
    assert "resumed" not in reproduction.run_section({**run, "resumed_blocks": []})


def test_diagnose_on_some_designs_keeps_their_settings_and_refuses_an_unknown_one(tool):
    config = {"seed": 1, "studies": {"s": {"methods": ["m"], "designs": {"a": {"n": 1}, "b": {"n": 2}}}, "t": {}}}
    cut = tool.only_some(config, "s", "designs", ["b"])
    assert cut["studies"]["s"] == {"methods": ["m"], "designs": {"b": {"n": 2}}}
    assert cut["studies"]["t"] == {} and config["studies"]["s"]["designs"].keys() == {"a", "b"}  # not changed
    assert tool.only_some(config, "s", "designs", None) is config
    with pytest.raises(SystemExit, match="no designs c"):
        tool.only_some(config, "s", "designs", ["c"])


def test_diagnose_on_some_methods_keeps_the_run_s_order_and_refuses_an_unknown_one(tool):
    config = {"seed": 1, "studies": {"s": {"methods": ["m", "n", "o"], "designs": {"a": {}}}}}
    cut = tool.only_some(config, "s", "methods", ["o", "m"])
    assert cut["studies"]["s"] == {"methods": ["m", "o"], "designs": {"a": {}}}
    assert config["studies"]["s"]["methods"] == ["m", "n", "o"]  # not changed
    assert tool.only_some(config, "s", "methods", None) is config
    with pytest.raises(SystemExit, match="no methods p"):
        tool.only_some(config, "s", "methods", ["p"])


def test_diagnose_refuses_an_unknown_part_before_building_anything(tool, monkeypatch):
    # the workflow step that builds the run's files (make run) must not start for a typo
    monkeypatch.setattr(tool, "ROOT", ROOT)  # the schema; it stops before writing anything
    monkeypatch.setattr(tool.subprocess, "run", lambda *a, **k: pytest.fail("the workflow ran"))
    with pytest.raises(SystemExit, match="unknown part.*the parts are latent_scale, implicit_off, doubled_fits"):
        tool.main(["diagnose", "amortized_ifa", "--config", "config/test.yaml", "--parts", "nope"])
