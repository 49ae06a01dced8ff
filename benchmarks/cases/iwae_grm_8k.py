"""IWAE (DReG), confirmatory multidimensional GRM: 8,000 persons x 12 items x 3 categories, P = 4, R = 5.

Target: fit to convergence in <= 15 s on 2 CPU cores (compilation included). Reports wall
seconds, steps and epochs, held-out log-likelihood per person (method-independent Laplace
importance sampling, 1,000 draws; also the method's own proposal and the true parameters),
loading / intercept / factor-correlation RMSE against the truth. ``IFA_8K_PERSONS`` overrides
the number of training persons; ``IFA_8K_BATCH`` (default 64), ``IFA_8K_LR`` (0.01) and
``IFA_8K_WARMUP`` (KL/entropy warm-up steps, 0) the settings shared with ``iwavb_grm_8k``.
Also fits, as an extra figure (not the paper's method), the same IWAE with a
full-covariance Gaussian q ("iwae_full_covariance").
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ifa_bench import SIZES_8K, SMOKE_8K, confirmatory_8k

SIZES = SIZES_8K
SMOKE = {"SIZES": SMOKE_8K}  # benchmarks/run.py --smoke


def run() -> dict:
    return confirmatory_8k("iwae", SIZES)
