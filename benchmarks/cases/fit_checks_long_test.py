"""Model checks of a long binary test: calibration at the true item values, and cost.

Data from the 2PNO itself (``data.simulate_binary``, 100 items, N = 20,000, seed ``SEED``),
20% of the cells hidden at random, checked at the generating item values by
``fit_checks.check`` (item fit, local dependence with ``REPLICATIONS`` replicated data sets,
person fit) on the grid the items' information asks for (``fit_checks.nodes_for``) and on the
41 Gauss-Hermite nodes the checks used before. A person's posterior sd is near 0.13 here; the
share of items flagged at 5% is the false-alarm rate. Reported: ``latent_states`` (nodes of
the default grid), ``items_flagged_share`` and ``checks_seconds`` on each grid, and
``posterior_seconds``, ``loo_seconds`` (the posteriors and the leave-one-out predictives of
every cell on the default grid), the parts the checks repeat.

Targets: at most 10% of items flagged on the default grid (a binomial(100, 0.05) count
exceeds 10 with probability 1.1%), and ``checks_seconds`` at most 60 on 2 cores.
"""

import time

from bayesirt.data import missingness
from bayesirt.data.simulate_binary import simulate_binary
from bayesirt.evaluation import fit_checks

N_PERSONS = 20_000
N_ITEMS = 100
MISSING = 0.2
REPLICATIONS = 50
SEED = 20261127
COARSE_NODES = 41
TARGET_FLAGGED_SHARE = 0.10
TARGET_SECONDS = 60.0
SMOKE = {"N_PERSONS": 300, "N_ITEMS": 20, "REPLICATIONS": 2}


def run() -> dict:
    rm, truth = simulate_binary(SEED, N_PERSONS, N_ITEMS, model="2pno")
    rm, _ = missingness.inject(rm, "mcar", MISSING, SEED)
    items = truth[truth.person == -1]
    a = items[items.parameter == "discrimination"].sort_values("item").value.to_numpy()
    d = items[items.parameter == "difficulty"].sort_values("item").value.to_numpy()
    y = rm.responses
    out = {}
    grids = {"default": fit_checks.twopno_grid(a, d), "coarse": fit_checks.twopno_grid(a, d, COARSE_NODES)}
    for name, grid in grids.items():
        t0 = time.perf_counter()
        checks = fit_checks.check(y, grid, n_parameters=0, n_replications=REPLICATIONS, seed=SEED)
        out[name] = {
            "latent_states": checks.summary["latent_states"],
            "checks_seconds": time.perf_counter() - t0,
            "items_flagged_share": checks.summary["items_flagged"] / checks.summary["items"],
            "items_misfit_share": checks.summary["items_misfit"] / checks.summary["items"],
            "persons_flagged_share": checks.summary["persons_flagged_share"],
        }
    t0 = time.perf_counter()
    fit_checks.person_posteriors(y, grids["default"])
    posterior_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    fit_checks.leave_one_out_predictive(y, grids["default"])
    loo_seconds = time.perf_counter() - t0
    default = out["default"]
    return {
        "sizes": {"persons": N_PERSONS, "items": N_ITEMS, "missing": MISSING, "replications": REPLICATIONS},
        "wall_seconds": default["checks_seconds"],
        "latent_states": default["latent_states"],
        "items_flagged_share": default["items_flagged_share"],
        "checks_seconds": default["checks_seconds"],
        "coarse_items_flagged_share": out["coarse"]["items_flagged_share"],
        "coarse_checks_seconds": out["coarse"]["checks_seconds"],
        "posterior_seconds": posterior_seconds,
        "loo_seconds": loo_seconds,
        "grids": out,
        "targets": {"items_flagged_share": TARGET_FLAGGED_SHARE, "checks_seconds": TARGET_SECONDS},
        "targets_met": default["items_flagged_share"] <= TARGET_FLAGGED_SHARE
        and default["checks_seconds"] <= TARGET_SECONDS,
    }
