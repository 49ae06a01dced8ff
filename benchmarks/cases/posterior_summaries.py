"""Posterior summaries of a paper-size Gibbs fit: 4 chains x 10,000 draws of 1,000 abilities and
20 discriminations and difficulties (the gibbs_2pno design n1kj20), summarized by
``posterior_summary.summary_table`` (ArviZ's R-hat, bulk and tail ESS and MCSE, computed for every
parameter at once) and, on the same draws, by ArviZ itself one parameter at a time (what the
summaries did before).

The draws are AR(1) chains with autocorrelations from 0 to 0.95, one chain of a few parameters
shifted (seed 0). Both are timed once, one after the other, in one process; the figures are
the seconds of each, their ratio, and per statistic the largest relative difference between the
two over the parameters. ArviZ folds float32 draws about their median in float32 and the
summaries in float64, so the tail R-hat can differ there by float32 rounding (~1e-5); the unit
tests hold the two equal on float64 draws.
"""

import time

import numpy as np

from bayesirt.inference.samplers import posterior_summary, sampling

N_CHAINS, N_DRAWS, N_PERSONS, N_ITEMS = 4, 10_000, 1_000, 20
SEED = 0
# benchmarks/run.py --smoke
SMOKE = {"N_DRAWS": 200, "N_PERSONS": 30, "N_ITEMS": 3}


def draws(rng, size: int) -> np.ndarray:
    """(chain, draw, size) AR(1) chains, float32 as the samplers keep them."""
    phi = np.linspace(0.0, 0.95, size)
    x = np.empty((N_CHAINS, N_DRAWS, size))
    x[:, 0] = rng.normal(size=(N_CHAINS, size))
    noise = rng.normal(size=(N_CHAINS, N_DRAWS, size)) * np.sqrt(1 - phi**2)
    for t in range(1, N_DRAWS):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    x[0, :, : max(1, size // 50)] += 0.3
    return x.astype(np.float32)


def arviz_summary(idata):
    """The statistics of ``summary_table`` from ArviZ's own functions, parameter by parameter."""
    import arviz as az

    post = idata.posterior
    out = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for name in post.data_vars:
            single = post[[name]]
            out[name] = {
                "mcse_mean": az.mcse(single, method="mean")[name].values,
                "ess_bulk": az.ess(single, method="bulk")[name].values,
                "ess_tail": az.ess(single, method="tail")[name].values,
                "r_hat": az.rhat(single)[name].values,
            }
    return out


def run() -> dict:
    rng = np.random.default_rng(SEED)
    posterior = {
        "ability": draws(rng, N_PERSONS),
        "discrimination": draws(rng, N_ITEMS),
        "difficulty": draws(rng, N_ITEMS),
    }
    dims = {"ability": ["person"], "discrimination": ["item"], "difficulty": ["item"]}
    idata = sampling.to_inference_data(posterior, dims=dims)

    t0 = time.perf_counter()
    table = posterior_summary.summary_table(idata)
    ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    reference = arviz_summary(idata)
    theirs = time.perf_counter() - t0

    worst = dict.fromkeys(["mcse_mean", "ess_bulk", "ess_tail", "r_hat"], 0.0)
    for name, stats in reference.items():
        rows = table[table.parameter == name]
        for stat, values in stats.items():
            got, want = rows[stat].to_numpy(), np.ravel(values)
            both = np.isfinite(got) & np.isfinite(want)
            assert np.array_equal(np.isfinite(got), np.isfinite(want)), f"{name} {stat}: NaN where ArviZ has none"
            diff = np.abs(got[both] - want[both]) / np.abs(want[both])
            worst[stat] = max(worst[stat], float(np.max(diff, initial=0.0)))
    return {
        "sizes": {"chains": N_CHAINS, "draws": N_DRAWS, "parameters": N_PERSONS + 2 * N_ITEMS},
        "wall_seconds": ours,
        "summary_seconds": ours,
        "arviz_seconds": theirs,
        "speedup": theirs / ours,
        "max_relative_difference": worst,
    }
