"""IPIP-FFM raw file at full size (1,015,000 x 110, synthetic, exact format): parse + preprocess time and peak memory.

The synthetic file is written by ``bayesirt.data.ipip_synthetic.write_synthetic_raw`` into
results/benchmarks/ipip_synthetic/ (git-ignored; reused when present with the same size and
seed). Parsing and the full preprocessing (IPC filter, empty persons, the four careless-responder
flags with the Guttman bootstrap cut-offs, whose GRMs are fitted by ``bayesirt.inference.marginal.mml.fit_arrays``)
run in a child process through ``ipip.load``, the same code the workflow uses, so that its peak
resident memory is measured alone
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``).

Targets: <= 120 s wall time and <= 8 GB peak memory on 2 CPU cores.
"""

import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from bayesirt.data import ipip, ipip_synthetic
from bayesirt.io import read_json, write_json

N_ROWS = 1_015_000
SEED = 20181108
ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "results" / "benchmarks" / "ipip_synthetic"
NULL_ROWS = 1800
# benchmarks/run.py --smoke: a small file of the same format, in the smoke folder
SMOKE = {"N_ROWS": 3000, "NULL_ROWS": 5, "OUT": ROOT / "results" / "benchmarks" / "smoke" / "ipip_synthetic"}
CHILD = """
import json, sys, time
from bayesirt.data import ipip
from bayesirt.inference.marginal import mml
t0 = time.perf_counter()
rm, counts = ipip.load(sys.argv[1], fit_grm=mml.fit_arrays)
wall = time.perf_counter() - t0
print(json.dumps({"wall_seconds": wall, "persons": rm.n_persons, "items": rm.n_items,
                  "row_counts": counts.to_dict(orient="records"),
                  "screening": rm.attrs["screening"]}))
"""


def run() -> dict:
    path = OUT / "data-final.csv"
    stamp = OUT / "data-final.json"
    t0 = time.perf_counter()
    if not (path.exists() and stamp.exists() and read_json(stamp) == {"rows": N_ROWS, "seed": SEED}):
        ipip_synthetic.write_synthetic_raw(path, N_ROWS, seed=SEED, null_rows=NULL_ROWS)
        write_json({"rows": N_ROWS, "seed": SEED}, stamp)
    generate_seconds = time.perf_counter() - t0
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"ipip.load failed on the synthetic file:\n{proc.stderr[-3000:]}")
    child = json.loads(proc.stdout.strip().splitlines()[-1])
    peak_gb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / 1e9  # KiB on Linux
    wall = child["wall_seconds"]
    return {
        "sizes": {"rows": N_ROWS, "columns": len(ipip.COLUMNS), "file_bytes": path.stat().st_size},
        "wall_seconds": wall,
        "peak_rss_gb": peak_gb,
        "generate_seconds": generate_seconds,
        "persons_after_preprocessing": child["persons"],
        "row_counts": child["row_counts"],
        "screening": child["screening"],
        "targets": {"wall_seconds_max": 120.0, "peak_rss_gb_max": 8.0},
        "targets_met": bool(wall <= 120.0 and peak_gb <= 8.0),
    }
