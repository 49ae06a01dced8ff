"""Cost of every model check of a fitted RWA-size GRM (``evaluation.fit_checks``), after the fit.

Simulated RWA-size data (9,881 persons x 22 items x 9 categories, 2 scales, seed ``SEED``)
with 20% of the cells hidden at random, fitted by marginal ML (``inference.marginal.mml``, not timed);
then, timed: ``fit_checks.check``, every check a fit gets: the item fit of every item, each
item's largest residual correlation with a parametric-bootstrap p-value from ``REPLICATIONS``
replicated data sets (each person's missing cells held fixed), and the person fit of every
person. Target: ``checks_seconds`` at most 10 on 2 cores.
"""

import time

import numpy as np

from bayesirt.data import missingness, simulate
from bayesirt.evaluation import fit_checks
from bayesirt.inference.marginal import mml
from bayesirt.models import factorized_grm as fgrm

N_PERSONS = 9881
MISSING = 0.2
REPLICATIONS = 50
SEED = 20261126
TARGET_SECONDS = 10.0
SMOKE = {"N_PERSONS": 300, "REPLICATIONS": 2}


def run() -> dict:
    rm, _ = simulate.from_preset("rwa", SEED, N_PERSONS)
    rm, _ = missingness.inject(rm, "mcar", MISSING, SEED)
    st = fgrm.structure_of(rm)
    structure = mml.Structure(np.asarray(st.n_categories), np.asarray(st.scale_index))
    t0 = time.perf_counter()
    fit = mml.fit(None, rm.responses, structure, mml.MMLSettings(max_iter=500, tol=1e-6))
    fit_seconds = time.perf_counter() - t0
    grid = fit_checks.grm_grid(fit.discrimination, fit.cuts, structure.n_categories, structure.factor)
    y = rm.responses
    t0 = time.perf_counter()
    checks = fit_checks.check(y, grid, n_replications=REPLICATIONS, seed=SEED)
    checks_seconds = time.perf_counter() - t0
    return {
        "sizes": {"persons": N_PERSONS, "items": rm.n_items, "categories": 9, "missing": MISSING},
        "wall_seconds": fit_seconds + checks_seconds,
        "fit_seconds": fit_seconds,
        "checks_seconds": checks_seconds,
        "replications": REPLICATIONS,
        "items_flagged": checks.summary["items_flagged"],
        "persons_flagged_share": checks.summary["persons_flagged_share"],
        "summary": checks.summary,
        "targets": {"checks_seconds": TARGET_SECONDS},
        "targets_met": checks_seconds <= TARGET_SECONDS,
    }
