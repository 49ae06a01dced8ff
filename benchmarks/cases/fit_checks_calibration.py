"""Calibration and power of the model checks with missing responses (``evaluation.fit_checks``).

Null: data from the GRM itself (10 items, N = 2,000; binary and 4 categories), fitted by
marginal ML (``inference.marginal.mml``), checked at the estimates; at 0%, 20% and 50% MCAR and at 20%
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
item fit is measured against. For the 3PL also by a likelihood-ratio test built for that very
alternative (``guessing_lr_p_values``: a lower asymptote for one item at a time), a reference
for the power any item-fit statistic can have in this design.

Targets: KS p > 0.01 and the 5% rejection rate within 2 Monte Carlo standard errors of 5% in
every null condition; power >= 0.80 in every power condition.
"""

import time

import numpy as np
from scipy import optimize, stats
from scipy.special import expit, logsumexp

from bayesirt.data import missingness, simulate
from bayesirt.evaluation import fit_checks
from bayesirt.inference.marginal import mml

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


def misfit_data(kind: str, rate: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Binary responses, and the items' difficulties b; items ``MISFIT`` are 3PL (guessing 0.25)
    or load on a second factor."""
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
    return y, b


def _item_nll(theta, guess: bool, rest, yj, answered, nodes) -> float:
    """-log-likelihood of one binary item's answers, 3PL (``guess``) or 2PL with
    theta = (a, d[, logit c]), given the other items' log-likelihood ``rest`` (N, Q) on the nodes."""
    c = expit(theta[2]) if guess else 0.0
    p = np.clip(c + (1 - c) * expit(theta[0] * nodes - theta[1]), 1e-12, 1 - 1e-12)
    lp = np.where(answered[:, None], np.where(yj[:, None] == 1, np.log(p), np.log1p(-p)), 0.0)
    return -logsumexp(rest + lp, axis=1).sum()


def guessing_lr_p_values(y: np.ndarray, grid) -> np.ndarray:
    """A test built for the 3PL alternative, as a reference for the power an omnibus item fit can
    have: per item, the likelihood ratio of a 3PL against a 2PL for that item, the other items
    held at their fitted 2PL (their log-likelihood on the grid's nodes), abilities integrated out
    on the grid. The guessing parameter lies on its boundary (0) under the null, so the p-value
    is the 50:50 mixture of chi2(0) and chi2(1)."""
    nodes, n_items = np.asarray(grid.order), y.shape[1]
    answered = y >= 0
    log_probs = np.log(grid.probs)[:, np.arange(n_items)[None, :], np.maximum(y, 0)]  # (Q, N, I)
    cell = np.where(answered[:, None, :], log_probs.transpose(1, 0, 2), 0.0)  # (N, Q, I)
    total = grid.log_weights[None, :] + cell.sum(-1)
    settings = {"xatol": 1e-6, "fatol": 1e-6, "maxiter": 4000}
    p_values = np.full(n_items, np.nan)
    for j in range(n_items):
        data = (total - cell[:, :, j], y[:, j], answered[:, j], nodes)
        slope, intercept = np.polyfit(nodes, np.log(grid.probs[:, j, 1] / grid.probs[:, j, 0]), 1)
        two = optimize.minimize(
            _item_nll, [slope, -intercept], args=(False, *data), method="Nelder-Mead", options=settings
        )
        three = min(
            (
                optimize.minimize(_item_nll, [*two.x, c0], args=(True, *data), method="Nelder-Mead", options=settings)
                for c0 in (-3.0, -1.5, -0.5)
            ),
            key=lambda r: r.fun,
        )
        p_values[j] = 0.5 * stats.chi2.sf(max(2 * (two.fun - three.fun), 0.0), 1)
    return p_values


def by_difficulty(b: np.ndarray, flags: dict) -> dict:
    """The share of misfitting items flagged, by thirds of the difficulty range [-1.5, 1.5]
    (None for a band without items)."""
    bands = {"b_below_-0.5": b < -0.5, "b_-0.5_to_0.5": (b >= -0.5) & (b <= 0.5), "b_above_0.5": b > 0.5}
    return {
        band: {
            "items": int(inside.sum()),
            **{name: float(f[inside].mean()) if inside.any() else None for name, f in flags.items()},
        }
        for band, inside in bands.items()
    }


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
            flagged, by_item_fit, false, by_sx2, by_lr, difficulty = [], [], [], [], [], []
            for r in range(REPLICATIONS):
                y, b = misfit_data(kind, rate, SEED + 1000 + r)
                difficulty.append(b[list(MISFIT)])
                grid = grid_of_fit(y, np.full(N_ITEMS, 2))
                t = fit_checks.check(y, grid, n_replications=LD_REPLICATIONS, seed=r).items
                flagged.append(t.flagged.to_numpy()[list(MISFIT)])
                by_item_fit.append(t.fit_flagged.to_numpy()[list(MISFIT)])
                false.append(np.delete(t.flagged.to_numpy(), list(MISFIT)))
                if rate == 0:
                    by_sx2.append(fit_checks.sx2_complete(y, grid).flagged.to_numpy()[list(MISFIT)])
                if kind == "3pl":
                    by_lr.append(guessing_lr_p_values(y, grid) < 0.05)
            lr = np.array(by_lr)
            power[f"{kind}_mcar{int(rate * 100)}"] = {
                "power": float(np.mean(flagged)),
                "power_item_fit_alone": float(np.mean(by_item_fit)),
                "flag_rate_of_fitting_items": float(np.mean(false)),
                **({"power_classical_sx2": float(np.mean(by_sx2))} if by_sx2 else {}),
                **(
                    {
                        "power_guessing_lr": float(lr[:, list(MISFIT)].mean()),
                        "guessing_lr_flag_rate_of_fitting_items": float(np.delete(lr, list(MISFIT), axis=1).mean()),
                        "by_difficulty": by_difficulty(
                            np.array(difficulty),
                            {"item_fit": np.array(by_item_fit), "guessing_lr": lr[:, list(MISFIT)]},
                        ),
                    }
                    if by_lr
                    else {}
                ),
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
