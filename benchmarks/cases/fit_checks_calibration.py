"""Calibration and power of the model checks with missing responses (``evaluation.fit_checks``).

Null: data from the GRM itself (10 items, N = 2,000; binary and 4 categories), fitted by
marginal ML (``inference.mml``), checked at the estimates; at 0%, 20% and 50% MCAR and at 20%
MAR (``data.missingness.inject``, driven by the first item, which is never hidden). Over
``REPLICATIONS`` data sets x 10 items per condition: the Kolmogorov-Smirnov p-value of the
item-fit p-values against the uniform, and the rejection rate at 5% with its Monte Carlo
standard error. Under MAR also the item fit without completing the missing cells
(``_observed_only``, ``item_fit(seed=None)``), and that without the driving item
(``_observed_only_non_driver``): there the other items' missing cells depend on the driver's
value, so its predictive from the observed rest alone is not its distribution given what the
check conditions on. These two are shown for comparison and are not targets. At 20% MCAR and
20% MAR also the local-dependence p-values (``local_dependence_null``; the bootstrap draws
abilities given the observed data, so they are expected on the conservative side).

Power: binary data where 3 of 10 items misfit the 2PL, either a 3PL (guessing 0.25) or a
second factor (loading 1.2, uncorrelated with the first) in a third of the items; N = 2,000 at
0% and 20% MCAR; the share of misfitting items x data sets flagged at 5% by ``fit_checks.check``
(item fit or local dependence, ``LD_REPLICATIONS`` replications), and by the item fit alone;
at 0% missing also by the classical summed-score S-X2 (``sx2_complete``), the reference the
item fit is measured against.

Targets: KS p > 0.01 and the 5% rejection rate within 2 Monte Carlo standard errors of 5% in
every null condition; power >= 0.80 in every power condition.
"""

import time

import numpy as np
from scipy import stats

from bayesirt.data import missingness, simulate
from bayesirt.evaluation import fit_checks
from bayesirt.inference import mml

N_PERSONS = 2000
N_ITEMS = 10
REPLICATIONS = 20
SEED = 20261126
NULL = {"mcar0": ("mcar", 0.0), "mcar20": ("mcar", 0.2), "mcar50": ("mcar", 0.5), "mar20": ("mar", 0.2)}
CATEGORIES = (2, 4)
MISFIT = (7, 8, 9)
LD_REPLICATIONS = 50
LD_NULL = ("mcar20", "mar20")  # null conditions whose local-dependence p-values are measured too
SMOKE = {"N_PERSONS": 400, "REPLICATIONS": 2, "LD_REPLICATIONS": 5}


def grid_of_fit(y, n_categories):
    """The grid of a marginal-ML fit of the GRM (2PL for binary items) to ``y``."""
    fit = mml.fit(None, y, mml.Structure(n_categories), mml.MMLSettings(max_iter=500, tol=1e-6))
    return fit_checks.grm_grid(fit.discrimination, fit.cuts, n_categories)


def null_p_values(kind: str, rate: float, k: int, seed: int, local_dependence: bool) -> tuple[np.ndarray, ...]:
    """Item-fit p-values (10) of one data set from the model, with the missing cells completed
    (the default) and from the observed cells only; and the local-dependence p-values (NaN
    unless ``local_dependence``)."""
    rm, _ = simulate.simulate_factorized_grm(seed, N_PERSONS, [N_ITEMS], k, ["A"])
    if rate > 0:
        rm, _ = missingness.inject(rm, kind, rate, seed)
    y = rm.responses
    grid = grid_of_fit(y, np.full(N_ITEMS, k))
    completed = fit_checks.item_fit(y, grid, seed=seed)
    observed_only = fit_checks.item_fit(y, grid, seed=None)
    ld = np.full(N_ITEMS, np.nan)
    if local_dependence:
        ld = fit_checks.local_dependence(y, grid, n_replications=LD_REPLICATIONS, seed=seed).p_value.to_numpy()
    return completed.p_value.to_numpy(), observed_only.p_value.to_numpy(), ld


def misfit_data(kind: str, rate: float, seed: int) -> np.ndarray:
    """Binary responses; items ``MISFIT`` are 3PL (guessing 0.25) or load on a second factor."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((N_PERSONS, 2))
    a = rng.uniform(1.0, 2.0, N_ITEMS)
    b = rng.uniform(-1.5, 1.5, N_ITEMS)
    eta = a * (theta[:, :1] - b)
    p = 1 / (1 + np.exp(-eta))
    misfit = np.isin(np.arange(N_ITEMS), MISFIT)
    if kind == "3pl":
        p = np.where(misfit, 0.25 + 0.75 * p, p)
    else:  # second factor
        p = np.where(misfit, 1 / (1 + np.exp(-(eta + 1.2 * theta[:, 1:]))), p)
    y = (rng.random(p.shape) < p).astype(np.int64)
    y[rng.random(y.shape) < rate] = -1
    return y


def calibration(p: np.ndarray) -> dict:
    """KS p-value against the uniform and the 5% rejection rate of the finite p-values."""
    p = p[np.isfinite(p)]
    return {
        "p_values": int(p.size),
        "ks_p": float(stats.kstest(p, "uniform").pvalue),
        "rejection_5": float((p < 0.05).mean()),
        "rejection_mcse": float(np.sqrt(0.05 * 0.95 / p.size)),
    }


def run() -> dict:
    t0 = time.perf_counter()
    null, compared, local_dependence_null = {}, {}, {}
    for k in CATEGORIES:
        for name, (kind, rate) in NULL.items():
            with_ld = name in LD_NULL
            runs = [null_p_values(kind, rate, k, SEED + r, with_ld) for r in range(REPLICATIONS)]
            p_all, p_observed_only, p_ld = (np.stack(ps) for ps in zip(*runs, strict=True))
            null[f"K{k}_{name}"] = calibration(p_all)
            if with_ld:
                local_dependence_null[f"K{k}_{name}"] = calibration(p_ld)
            if kind == "mar":
                compared[f"K{k}_{name}_observed_only"] = p_observed_only
                compared[f"K{k}_{name}_observed_only_non_driver"] = p_observed_only[:, 1:]
    comparison = {label: calibration(p) for label, p in compared.items()}
    power = {}
    for kind in ("3pl", "second_factor"):
        for rate in (0.0, 0.2):
            flagged, by_item_fit, false, by_sx2 = [], [], [], []
            for r in range(REPLICATIONS):
                y = misfit_data(kind, rate, SEED + 1000 + r)
                grid = grid_of_fit(y, np.full(N_ITEMS, 2))
                t = fit_checks.check(y, grid, n_replications=LD_REPLICATIONS, seed=r).items
                flagged.append(t.flagged.to_numpy()[list(MISFIT)])
                by_item_fit.append(t.fit_flagged.to_numpy()[list(MISFIT)])
                false.append(np.delete(t.flagged.to_numpy(), list(MISFIT)))
                if rate == 0:
                    by_sx2.append(fit_checks.sx2_complete(y, grid).flagged.to_numpy()[list(MISFIT)])
            power[f"{kind}_mcar{int(rate * 100)}"] = {
                "power": float(np.mean(flagged)),
                "power_item_fit_alone": float(np.mean(by_item_fit)),
                "flag_rate_of_fitting_items": float(np.mean(false)),
                **({"power_classical_sx2": float(np.mean(by_sx2))} if by_sx2 else {}),
            }
    ks_min = min(v["ks_p"] for v in null.values())
    worst_rejection = max(null.values(), key=lambda v: abs(v["rejection_5"] - 0.05))
    power_min = min(v["power"] for v in power.values())
    met = {
        "ks_p_min": ks_min > 0.01,
        "rejection_5": all(abs(v["rejection_5"] - 0.05) <= 2 * v["rejection_mcse"] for v in null.values()),
        "power_min": power_min >= 0.80,
    }
    return {
        "sizes": {"persons": N_PERSONS, "items": N_ITEMS, "replications": REPLICATIONS},
        "wall_seconds": time.perf_counter() - t0,
        "null": null,
        "comparison": comparison,
        "local_dependence_null": local_dependence_null,
        "power": power,
        "ks_p_min": ks_min,
        "rejection_5_worst": worst_rejection["rejection_5"],
        "power_min": power_min,
        "targets": {"ks_p_above": 0.01, "rejection_5_within_mcse": 2, "power_at_least": 0.80},
        "targets_detail": met,
        "targets_met": all(met.values()),
    }
