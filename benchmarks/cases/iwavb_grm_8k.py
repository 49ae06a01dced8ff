"""IWAVB (adaptive contrast, DReG), confirmatory multidimensional GRM: 8,000 persons x 12 items x 3
categories, P = 4, R = 5.

Same data, held-out set and figures as ``iwae_grm_8k``; encoder trunk 128, discriminator
(256, 128) as in the paper's section 4.2; discriminator learning rate 3x the encoder's (0.03 and 0.01; with the paper's
0.01 and 0.001 a fit needs several times more steps, and with 1/3 of IWAE's rate it stopped
with large loadings still shrunk).
Target: fit to convergence in <= 15 s on 2 CPU cores (compilation included).

Batch 64 (both 8k cases): the step's cost is linear in the batch (the discriminator's
matrix products over R x batch rows dominate, ~60 us per person and step on 2 cores) while
the number of steps to convergence barely grows as the batch shrinks (1,600 steps at 64,
1,400 at 128, about as many at 256), so the fewest epochs (~13 at 64, ~22 at 128, ~42 at
256) reach the same held-out log-likelihood (-11.400 at 64, -11.401 at 128). ``IFA_8K_BATCH``, ``IFA_8K_LR`` and
``IFA_8K_WARMUP`` (KL/entropy warm-up steps, default 0) override the settings. Compilation
is counted; the persistent compilation cache (every program, see ``_ifa_bench``) makes a
rerun ~2 s faster than a cold run.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ifa_bench import SIZES_8K, SMOKE_8K, confirmatory_8k

SIZES = SIZES_8K
SMOKE = {"SIZES": SMOKE_8K}  # benchmarks/run.py --smoke


def run() -> dict:
    return confirmatory_8k("iwavb", SIZES)
