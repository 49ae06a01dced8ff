"""Clear Snakemake's lock on this project when, and only when, it is stale.

Snakemake locks the outputs of a run in ``.snakemake/locks/`` and removes the lock when it
exits. A run killed hard (kill -9, a lost terminal, a crashed machine) leaves the lock behind,
and the next run refuses to start until ``snakemake --unlock``. Unlocking while another run of
the same project is still going would let two runs write the same files, so the lock is cleared
only when no process of this project is alive: none whose working directory is the project
folder and whose command line mentions Snakemake (the scheduler, and the jobs it started: they
run scripts from ``.snakemake/scripts/``).

Usage: python workflow/unlock_if_stale.py [snakemake options passed on to --unlock]
Exit status 0: no lock, or a stale lock cleared; 1: a run of this project is alive (the lock
is left alone and the processes named).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil


def live_runs(root: Path) -> list[tuple[int, str]]:
    """(pid, command line) of every other process of this project that mentions Snakemake."""
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        info = proc.info
        if info["pid"] in mine or not info.get("cwd") or not info.get("cmdline"):
            continue  # processes of other users give neither (access denied)
        command = " ".join(info["cmdline"])
        try:
            same_project = Path(info["cwd"]).resolve() == root
        except OSError:
            continue
        if same_project and "snakemake" in command.lower():
            found.append((info["pid"], command))
    return found


def main(argv: list[str]) -> int:
    root = Path.cwd().resolve()
    locks = root / ".snakemake" / "locks"
    if not locks.is_dir() or not any(locks.iterdir()):
        return 0
    alive = live_runs(root)
    if alive:
        print("A Snakemake run of this project is still running; its lock is left in place:", file=sys.stderr)
        for pid, command in alive:
            print(f"  pid {pid}: {command[:160]}", file=sys.stderr)
        print("Wait for it to finish, or stop it, then run the command again.", file=sys.stderr)
        return 1
    print(
        "Found a lock left by an interrupted run and no Snakemake process of this project alive: "
        "clearing it (snakemake --unlock). Outputs the interrupted jobs left half-written are "
        "rebuilt (--rerun-incomplete).",
        flush=True,
    )
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--unlock", *argv], capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout + proc.stderr, file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
