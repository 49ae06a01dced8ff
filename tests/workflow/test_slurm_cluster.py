"""The SLURM profile against a running scheduler, not only a dry run.

tests/slurm/start_cluster.sh starts a one-node SLURM cluster on this machine (root only: it
installs slurm-wlm and munge with apt-get when they are missing). Two studies of
config/test.yaml (``SLURM_STUDIES``, its cheapest: about a sixth of the whole config's job time)
then run through ``--workflow-profile workflow/profiles/slurm --executor slurm`` unchanged: every
job goes through sbatch with the profile's partition, runtime, memory, CPUs and GPU request, runs
on the node under slurmstepd, and must give the same files, bit for bit, as the local run of the
whole config (tests/workflow/conftest.py). The two use every mechanism the profile has (group
jobs, fitting jobs with 2 and 4 CPUs and a GPU, report notebooks); the other studies' jobs differ
from theirs only in the profile's numbers. A job that fails on the node must be reported with
its logs. Skipped, with the reason, where no cluster can be started (not root, no apt-get, a SLURM
configured already)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bayesirt.studies.gibbs_2pno import settings as gibbs_settings
from tests.configs import validated

from .runs import OTHER_RUNS, ROOT, assert_same_results, snakemake, workflow_copy

START = ROOT / "tests" / "slurm" / "start_cluster.sh"
PROFILE = yaml.safe_load((ROOT / "workflow" / "profiles" / "slurm" / "config.yaml").read_text())
# The test node is sized from the profile so that four fitting jobs, the largest included, are
# scheduled at once (declared sizes, not the machine's: the node enforces no limits).
CONCURRENT_FITS = 4
FITS = {rule: res for rule, res in PROFILE["set-resources"].items() if rule.startswith("fit_")}
NODE = {
    "BAYESIRT_SLURM_PARTITION": PROFILE["default-resources"]["slurm_partition"],
    "BAYESIRT_SLURM_CPUS": str(CONCURRENT_FITS * max(res["cpus_per_task"] for res in FITS.values())),
    "BAYESIRT_SLURM_MEM_MB": str(CONCURRENT_FITS * max(res["mem_mb"] for res in FITS.values())),
    "BAYESIRT_SLURM_GPUS": str(CONCURRENT_FITS),
}
# The test's own executor settings: squeue for job states (a test cluster has no accounting
# database for sacct; finished jobs stay in squeue for MinJobAge), a first status check after
# 2 s instead of 40, the node's logs kept, and --verbose, which prints each sbatch command line.
# Threads are set to those of the local run: 1, but the Gibbs fits' (their chains' worker
# processes, config/test.yaml). Snakemake exports a job's threads as OPENBLAS_NUM_THREADS and
# OMP_NUM_THREADS: the LCDM EM standard errors (jnp.linalg.inv through LAPACK) change in their
# last float32 digits with the first, and a job of one thread runs XLA's operations on its own
# thread (bayesirt.runtime.follow_thread_limit), which its records' device.xla_flags name. That
# is the profile's thread count, not the scheduler: the SLURM resources (sbatch --cpus-per-task)
# still come from the profile's cpus_per_task.
LOCAL_THREADS = {"fit_gibbs_2pno": gibbs_settings.fit_threads(validated("test.yaml"), "gibbs")}
SLURM_ARGS = (
    "--workflow-profile",
    "workflow/profiles/slurm",
    "--executor",
    "slurm",
    "--jobs",
    "8",
    "--slurm-status-command",
    "squeue",
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--slurm-keep-successful-logs",
    "--verbose",
    "--set-threads",
    *(f"{rule}={LOCAL_THREADS.get(rule, 1)}" for rule in PROFILE["set-threads"]),
)
# The studies run through the scheduler, and the rules that start the others' part of the
# graph (Snakemake's --omit-from leaves them and everything downstream out, the target `all` too).
SLURM_STUDIES = ("gibbs_2pno", "dcm_bbvi")
OMIT_FROM = ("ifa_simulate", "vibo_simulate", "simulate_dataset")
pytestmark = pytest.mark.workflow


def why_no_cluster() -> str | None:
    if not sys.platform.startswith("linux"):
        return "a SLURM test cluster needs Linux"
    if os.geteuid() != 0:
        return "starting a SLURM test cluster needs root (it installs packages and starts daemons)"
    if not all(shutil.which(tool) for tool in ("slurmctld", "slurmd", "munged")) and not shutil.which("apt-get"):
        return "SLURM is not installed and apt-get is not available to install it"
    return None


@pytest.fixture(scope="module")
def cluster():
    """Environment variables that point SLURM's clients to the running test cluster."""
    reason = why_no_cluster()
    if reason:
        pytest.skip(reason)
    env = {**os.environ, **NODE}
    try:
        proc = subprocess.run([str(START), "start"], env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode in (3, 4):  # SLURM configured already here / packages not installable
            pytest.skip(f"no SLURM test cluster: {proc.stderr.strip()}")
        assert proc.returncode == 0, f"start_cluster.sh start failed:\n{proc.stdout}\n{proc.stderr}"
        conf = re.search(r"^SLURM_CONF=(.+)$", proc.stdout, flags=re.M).group(1)
        yield {"SLURM_CONF": conf}
    finally:
        # the daemons go even when the start or a test failed
        subprocess.run([str(START), "stop"], env=env, capture_output=True, text=True, timeout=120)


def scheduler_jobs(env) -> dict[str, dict]:
    """Every job the controller knows (finished ones stay for MinJobAge), by SLURM job id."""
    out = subprocess.run(
        ["scontrol", "show", "job", "--details", "--oneliner"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    jobs = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "JobId" in fields:
            jobs[fields["JobId"]] = fields
    return jobs


def minutes(limit: str) -> int:
    """A SLURM time limit (``[days-]hours:minutes:seconds``) in minutes."""
    days, _, clock = limit.rpartition("-")
    hours, mins, _ = clock.split(":")
    return int(days or 0) * 1440 + int(hours) * 60 + int(mins)


def started_jobs(output: str) -> dict[str, tuple[str, bool]]:
    """Snakemake job id -> (rule, run locally) of every job a run started on its own: ``localrule``
    jobs and the target ``all`` run in Snakemake's own process. The members of group jobs, printed
    indented under their group, are not among them (``group_jobs``)."""
    jobs = {}
    for block in re.split(r"^(?=(?:local)?rule \w+:$)", output, flags=re.M):
        head = re.match(r"(local)?rule (\w+):$", block, flags=re.M)
        jobid = re.search(r"^    jobid: (\d+)$", block, flags=re.M)
        if head and jobid:
            jobs[jobid.group(1)] = (head.group(2), bool(head.group(1)) or head.group(2) == "all")
    return jobs


def group_jobs(output: str) -> list[tuple[str, list[str]]]:
    """(group name, the rules of its member jobs) of every group job a run started."""
    groups = []
    for block in re.split(r"^(?=\[[^\]]+\] Group job )", output, flags=re.M)[1:]:
        name = re.match(r"\[[^\]]+\] Group job (\w+)", block).group(1)
        body = re.match(r"[^\n]*\n((?:\s*\n|    [^\n]*\n)*)", block).group(1)  # the indented lines
        groups.append((name, re.findall(r"^    rule (\w+):$", body, flags=re.M)))
    return groups


@pytest.fixture(scope="module")
def slurm_runs(cluster, local_run, compilation_cache, tmp_path_factory):
    """The SLURM_STUDIES of config/test.yaml through the SLURM profile, and beside it a run with one job that fails on
    the node (a real-data file with an out-of-range response code), submitted at the same time."""
    env = {**compilation_cache, **cluster}
    run = workflow_copy(tmp_path_factory.mktemp("slurm_run"))
    bad = workflow_copy(tmp_path_factory.mktemp("slurm_failing"))
    items = [f"Q{i}" for i in range(1, 23)]
    rows = [[str(1 + (p + i) % 9) for i in range(22)] for p in range(5)]
    rows[3][4] = "12"
    (bad / "bad.csv").write_text("\n".join(",".join(r) for r in [items, *rows]) + "\n")
    cfg = yaml.safe_load((ROOT / "config" / "test.yaml").read_text())
    cfg["datasets"]["rwa_bad"] = {"source": "rwa", "url": str(bad / "bad.csv")}
    (bad / "bad.yaml").write_text(yaml.safe_dump(cfg))
    failing = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "snakemake",
            "data/processed/rwa_bad/responses.parquet",
            *SLURM_ARGS,
            "--configfile",
            "bad.yaml",
        ],
        cwd=bad,
        env={**os.environ, **env},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        proc = snakemake(*SLURM_ARGS, "--configfile", "config/test.yaml", "--omit-from", *OMIT_FROM, cwd=run, env=env)
        OTHER_RUNS.append((run, SLURM_STUDIES))
    finally:
        failed_output = failing.communicate(timeout=600)[0]
    return {
        "run": run,
        "output": proc.stdout + proc.stderr,
        "bad": bad,
        "failed_output": failed_output,
        "failed_rc": failing.returncode,
        "scheduler": scheduler_jobs(cluster),
    }


def test_every_job_went_through_sbatch_with_the_profiles_resources(slurm_runs):
    output, scheduler = slurm_runs["output"], slurm_runs["scheduler"]
    started = started_jobs(output)
    groups = group_jobs(output)
    submitted = dict(re.findall(r"Job (\S+) has been submitted with SLURM jobid (\d+)", output))
    local = {jobid for jobid, (_, is_local) in started.items() if is_local}
    # no job ran in Snakemake's own process: no job copies a block's files, and the target `all`
    # is left out with the other studies
    local_rules = {started[j][0] for j in local}
    assert local_rules == set(), local_rules
    # both studies ran to their tables and reports, and nothing of the others did
    rules = {rule for rule, _ in started.values()}
    assert {"gibbs_tables", "dcm_bbvi_tables", "report_notebook"} <= rules, rules
    assert not any(rule.startswith(("fit_vibo", "fit_amortized", "fit_objective")) for rule in rules), rules
    assert len(started) >= 10
    # every other job got a SLURM job id of its own, and only once; each group job one more
    single = {j: sid for j, sid in submitted.items() if j.isdigit()}
    grouped = {j: sid for j, sid in submitted.items() if not j.isdigit()}
    assert set(single) == set(started) - local, sorted(set(started) ^ set(single))
    assert len(grouped) == len(groups) >= 1 and len(set(submitted.values())) == len(submitted)
    # the per-replication data jobs travelled in groups: fewer submissions than jobs
    members = sum(len(m) for _, m in groups)
    assert members > len(groups), groups
    assert {rule for _, m in groups for rule in m} <= set(PROFILE["groups"]), groups
    for jobid, slurm_id in single.items():
        rule, job = started[jobid][0], scheduler[slurm_id]
        # the controller ran it, to the end, for this rule (the plugin puts the rule in the comment)
        assert job["JobState"] == "COMPLETED" and job["ExitCode"] == "0:0", (rule, job)
        assert job["Comment"].startswith(f"rule_{rule}"), (rule, job["Comment"])
        res = {**PROFILE["default-resources"], **PROFILE["set-resources"].get(rule, {})}
        assert job["Partition"] == res["slurm_partition"]
        assert job["NumCPUs"] == str(res["cpus_per_task"]), (rule, job["NumCPUs"])
        assert f"mem={res['mem_mb']}M" in job["TRES"], (rule, job["TRES"])
        # fitting jobs were given one (count-only) GPU by the scheduler, the others none
        assert (job["JOB_GRES"] == "gpu:1") == rule.startswith("fit_"), (rule, job["JOB_GRES"])
        assert minutes(job["TimeLimit"]) == res["runtime"], (
            rule,
            job["TimeLimit"],
        )
        # the node wrote its log where the plugin said
        assert Path(job["StdOut"]).is_file(), job["StdOut"]
    for slurm_id in grouped.values():
        job = scheduler[slurm_id]
        assert job["JobState"] == "COMPLETED" and job["ExitCode"] == "0:0", job
        # side by side up to the profile's CPU limit per cluster job, one after another beyond
        assert int(job["NumCPUs"]) <= PROFILE["resources"]["cpus_per_task"], job["NumCPUs"]
        assert Path(job["StdOut"]).is_file(), job["StdOut"]
    assert {started[j][0] for j in single} >= {"fit_gibbs_2pno", "fit_gibbs_mixture", "fit_dcm_bbvi"}


def test_fitting_jobs_ask_for_a_gpu_in_the_plugins_form(slurm_runs):
    # the sbatch command lines themselves: --gpus=1 (the plugin's form for `gpu: 1`) on every
    # fitting job and on no other, with the profile's CPUs per task
    calls = re.findall(r"sbatch call: (sbatch .*)$", slurm_runs["output"], flags=re.M)
    assert len(calls) == len(re.findall(r"has been submitted with SLURM jobid", slurm_runs["output"]))
    fits = [call for call in calls if re.search(r"--comment '?rule_fit_", call)]
    assert len(fits) >= 5 and len(calls) > len(fits)
    for call in calls:
        assert (" --gpus=1" in call) == (call in fits), call
    assert all(re.search(r" --cpus-per-task=[24] ", call) for call in fits)


def test_results_are_those_of_the_local_run(slurm_runs, local_run):
    assert assert_same_results(local_run, slurm_runs["run"], studies=SLURM_STUDIES) >= 10


def test_a_job_failing_on_the_node_is_reported_with_its_logs(slurm_runs):
    output, bad = slurm_runs["failed_output"], slurm_runs["bad"]
    assert slurm_runs["failed_rc"] != 0, output[-3000:]
    failed = re.search(r"SLURM-job '(\d+)' failed, SLURM status is: 'FAILED'", output)
    assert failed, output[-3000:]
    job = slurm_runs["scheduler"][failed.group(1)]
    assert job["JobState"] == "FAILED" and job["Comment"].startswith("rule_prepare_rwa"), job
    # the node's log (the job's output on the node) is kept, named in the report, and says why
    node_log = Path(job["StdOut"])
    assert str(node_log) in output
    assert re.search(r"Error in rule prepare_rwa", node_log.read_text()), node_log.read_text()[-3000:]
    # the rule's own log, with the exception and its traceback, is shown in the report
    rule_log = (bad / "logs/data/rwa_bad.prepare.log").read_text()
    assert "Traceback (most recent call last)" in rule_log and "out of range" in rule_log
    assert re.search(r"DataFormatError: .*out of range", output), output[-3000:]
    assert not (bad / "data/processed/rwa_bad/responses.parquet").exists()


def test_start_refuses_where_slurm_is_configured_already(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("start_cluster.sh runs as root only")
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "slurm.conf").write_text("ClusterName=site\n")
    proc = subprocess.run(
        [str(START), "start"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BAYESIRT_SLURM_ETC": str(etc), "BAYESIRT_SLURM_DIR": str(tmp_path / "c")},
    )
    assert proc.returncode == 3 and "a SLURM configuration exists" in proc.stderr, proc.stderr
    assert (etc / "slurm.conf").read_text() == "ClusterName=site\n" and not (tmp_path / "c").exists()
