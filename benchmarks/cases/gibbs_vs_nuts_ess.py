"""2PNO on 500 x 20: ESS per second of the item parameters, Gibbs against NUTS, four chains each.

Same posterior (seed 001's priors): the data-augmentation Gibbs sampler, and numpyro NUTS on
the marginal log-density (Phi, no augmentation; log-discrimination with its Jacobian).
Seconds are each method's wall time after compilation, burn-in / warm-up included; ESS is
ArviZ's bulk ESS of every discrimination and difficulty (NUTS: of exp(log a)).
Targets (issue 10): ESS per second at least 10x NUTS's, max R-hat of the Gibbs sampler < 1.01.
The ratio is reported for the minimum over parameters (the slowest-mixing parameter decides
how long a run must be) and for the median.
The Gibbs chains run in worker processes pinned to one core each (as many as the machine's
usable cores, at most one per chain), as the study's fitting jobs run them; NUTS runs its chains
vectorized (``nuts.run_nuts``). Reductions are left to YNNPACK
(``bayesirt.runtime.use_library_reductions``), as in those jobs: it speeds the Gibbs sweeps'
sums over persons and leaves NUTS's time as it is (the Performance page has the figures).
"""

import dataclasses
import sys
from pathlib import Path

import arviz as az
import jax
import numpy as np

from bayesirt import runtime
from bayesirt.inference.execution.worker_processes import usable_cpus
from bayesirt.inference.samplers import gibbs
from bayesirt.inference.samplers.nuts import run_nuts
from bayesirt.inference.samplers.sampling import SamplerSettings
from bayesirt.models import twopno

# as the Gibbs fitting jobs: reductions left to YNNPACK (bayesirt.runtime)
runtime.use_library_reductions()

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _gibbs_bench import item_stats, load_average, simulate  # noqa: E402

N, J = 500, 20
GIBBS = SamplerSettings(n_chains=4, n_warmup=1000, n_samples=10_000, chunk=1000, progress_every=0)
NUTS = SamplerSettings(n_chains=4, n_warmup=500, n_samples=1000, progress_every=0)
DATA_SEED, FIT_SEED = 20261012, 3
CHAIN_PROCESSES = None  # Gibbs' worker processes; None: one per usable core (at most one per chain)
# benchmarks/run.py --smoke
SMOKE = {
    "N": 50,
    "J": 5,
    "GIBBS": SamplerSettings(n_chains=4, n_warmup=50, n_samples=100, chunk=50, progress_every=0),
    "NUTS": SamplerSettings(n_chains=4, n_warmup=30, n_samples=30, progress_every=0),
    "CHAIN_PROCESSES": 1,  # worker start-up is seconds of compilation; test_chain_processes covers them
}


def _nuts_item_ess(idata):
    post = idata.posterior
    ds = az.convert_to_dataset(
        {"discrimination": np.exp(post["log_discrimination"].values), "difficulty": post["difficulty"].values}
    )
    ess = az.ess(ds, method="bulk")
    rhat = az.rhat(ds)
    return (
        np.concatenate([ess[k].values.ravel() for k in ("discrimination", "difficulty")]),
        max(float(rhat[k].max()) for k in ("discrimination", "difficulty")),
    )


def run() -> dict:
    load_before = load_average()
    y, *_ = simulate(DATA_SEED, N, J)
    processes = min(CHAIN_PROCESSES or len(usable_cpus()), GIBBS.n_chains)
    sampler = dataclasses.replace(GIBBS, chain_processes=processes)
    g = gibbs.fit(jax.random.key(FIT_SEED), y, None, gibbs.GibbsSettings(sampler, abilities=False))
    gs = item_stats(g.summary)
    start = twopno.unconstrain(twopno.initial_values(y))
    nt = run_nuts(jax.random.key(FIT_SEED), twopno.make_log_density(y), start, NUTS)
    n_ess, n_rhat = _nuts_item_ess(nt.idata)
    g_min, g_med = gs["min_ess_bulk"] / g.wall_seconds, gs["median_ess_bulk"] / g.wall_seconds
    n_min, n_med = float(n_ess.min()) / nt.wall_seconds, float(np.median(n_ess)) / nt.wall_seconds
    ratio_min, ratio_med = g_min / n_min, g_med / n_med
    return {
        "sizes": {"persons": N, "items": J, "chains": 4},
        "wall_seconds": g.wall_seconds + nt.wall_seconds,
        "gibbs_wall_seconds": g.wall_seconds,
        "gibbs_compile_seconds": g.compile_seconds,
        "gibbs_sweeps": g.n_sweeps,
        "gibbs_chain_processes": processes,
        "nuts_wall_seconds": nt.wall_seconds,
        "nuts_compile_seconds": nt.compile_seconds,
        "nuts_iterations": nt.n_sweeps,
        "nuts_divergent": (nt.extra or {}).get("n_divergent"),
        "gibbs_max_r_hat": gs["max_r_hat"],
        "nuts_max_r_hat": n_rhat,
        "gibbs_min_ess_per_second": g_min,
        "gibbs_median_ess_per_second": g_med,
        "nuts_min_ess_per_second": n_min,
        "nuts_median_ess_per_second": n_med,
        "ess_per_second_ratio_min": ratio_min,
        "ess_per_second_ratio_median": ratio_med,
        "gibbs_min_ess_bulk": gs["min_ess_bulk"],
        "nuts_min_ess_bulk": float(n_ess.min()),
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "targets": {"ess_per_second_ratio_min": 10.0, "gibbs_max_r_hat_max": 1.01},
        "targets_met": bool(ratio_min >= 10.0 and gs["max_r_hat"] < 1.01),
        "note": "the machine's 2 cores may be shared with other jobs; see the load averages",
    }
