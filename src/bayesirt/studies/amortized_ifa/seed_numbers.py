"""The run's figures beside seed 003's numbers (``docs/reproduction/data/amortized_ifa/seed_numbers.yaml``;
``bayesirt.studies.seed_numbers`` puts them on the page).

Table 1 (IPIP-FFM, refits at five factors) is set against ``ipip/stability.csv`` (each refit's RMSE
against the reference fit) and ``ipip/timings.csv``; section 4.2's figures against the
``normal_p5`` design's fits and timings. A timing is one block's wall time shared by the fits
fitted together in it, so it has no spread between replications and is shown as a range over
blocks, never with an interval.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from bayesirt.studies.reproduction import describe
from bayesirt.studies.seed_numbers import Ours

NAMES = {"iwavb": "IWAVB", "iwae": "IWAE"}
ELBOW = 0.05  # the scree's elbow: the first P whose next factor adds less than 5% of the first gain


def stability(method: str, column: str) -> Callable[[dict], Ours]:
    """A Table 1 RMSE: each refit at five factors against the reference (the best fit)."""

    def figure(tables: dict) -> Ours:
        s = tables["stability"]
        s = s[s.method == method] if len(s) else s
        if s.empty:
            return Ours(
                None,
                f"the committed run has no {NAMES[method]} refits of the IPIP design at five factors "
                "(ipip/stability.csv); the run's 'left out' says why, and rerunning the ipip design with "
                f"{method} and more than one refit gives it",
            )
        return Ours(
            describe(s[column], unit="refits"),
            f"{NAMES[method]}: RMSE of each refit against the reference fit, over refits (the seed's SD is over "
            "its 99 refits against the best of 100)",
        )

    return figure


def blocks(times: pd.Series) -> str:
    """A timing as the blocks it was measured on: one block's value, or the range over blocks."""
    values = np.unique(np.round(times.to_numpy(dtype=float), 6))
    if values.size == 1:
        return f"{values[0]:.1f} s"
    return f"{values.min():.1f} to {values.max():.1f} s"


def ipip_time(method: str) -> Callable[[dict], Ours]:
    def figure(tables: dict) -> Ours:
        t = tables["timings"]
        t = t[(t.design == "ipip") & (t.method == method) & (t.n_factors == 5)]
        if t.empty:
            return Ours(
                None,
                f"the committed run fitted no {NAMES[method]} on the IPIP design at five factors (timings.csv); "
                f"rerunning the ipip design with {method} gives it",
            )
        return Ours(
            blocks(t.wall_seconds),
            f"{NAMES[method]}: wall time of a fit at five factors ({len(t)} fits; one block's time is shared by "
            "the fits in it, so it has no spread between them), on the machine in 'The run', not the seed's GPUs",
        )

    return figure


def ipip_refits(tables: dict) -> Ours:
    f = tables["fits"]
    f = f[(f.design == "ipip") & (f.n_factors == 5)]
    if f.empty:
        return Ours(None, "the committed run has no fit of the IPIP design at five factors")
    counts = ", ".join(f"{NAMES.get(m, m)} {n}" for m, n in f.groupby("method").size().items())
    return Ours(counts, "fits of the IPIP design at five factors (ipip/fits.csv)")


def scree_elbow(tables: dict) -> Ours:
    s = tables["scree"]
    if s.empty:
        return Ours(None, "the committed run has no scree (ipip/scree.csv); rerunning the ipip design gives it")
    parts, notes = [], []
    for method, g in s.groupby("method"):
        g = g.sort_values("n_factors")
        gains = np.diff(g.loglik_independent.to_numpy())
        p = g.n_factors.to_numpy()
        small = np.flatnonzero(gains < ELBOW * gains[0]) if gains.size else np.array([])
        if small.size:
            parts.append(f"{NAMES.get(method, method)} P = {p[small[0]]}")
        notes.append(
            f"{NAMES.get(method, method)}'s gain in held-out log-likelihood per person from P to P + 1: "
            + ", ".join(f"{a}→{a + 1} {d:.3f}" for a, d in zip(p[:-1], gains, strict=True))
        )
    if not parts:
        return Ours(None, "the scree has no P after which the gain falls away; " + "; ".join(notes))
    return Ours(
        ", ".join(parts),
        f"the first P whose next factor adds less than {ELBOW:.0%} of the first factor's gain; " + "; ".join(notes),
    )


def normal_intercept_mse(tables: dict) -> Ours:
    f = tables["fits"]
    f = f[f.design == "normal_p5"]
    if f.empty:
        return Ours(None, "the committed run has no fit of the normal_p5 design")
    # the fits at R = 15, 25, 35 of one replication share its data: one value per replication
    per_rep = f.groupby(["method", "rep"]).intercept_mse.mean().reset_index()
    parts = [f"{NAMES.get(m, m)} {describe(g.intercept_mse, 4)}" for m, g in per_rep.groupby("method")]
    return Ours("; ".join(parts), "intercept MSE per replication (averaged over R = 15, 25, 35), over replications")


def normal_time(tables: dict) -> Ours:
    t = tables["timings"]
    t = t[t.design == "normal_p5"]
    if t.empty:
        return Ours(None, "the committed run has no timing of the normal_p5 design")
    parts = [f"{NAMES.get(m, m)} {blocks(g.wall_seconds)}" for m, g in t.groupby("method")]
    return Ours(
        "; ".join(parts),
        "wall time of a fit, range over R = 15, 25, 35 (one block's time is shared by its replications, so it has "
        "no spread between them); on the machine in 'The run', not the seed's GPUs",
    )


def normal_iwavb_time_by_r(tables: dict) -> Ours:
    """IWAVB's time at each number of importance samples R (the seed: R = 35 took less than 15 or 25)."""
    t = tables["timings"]
    t = t[(t.design == "normal_p5") & (t.method == "iwavb")]
    if t.empty:
        return Ours(None, "the committed run has no IWAVB timing of the normal_p5 design")
    by_r = t.groupby("importance_samples").wall_seconds.mean()
    return Ours(
        ", ".join(f"R = {r}: {s:.1f} s" for r, s in by_r.items()) + f" (fastest R = {by_r.idxmin()})",
        "IWAVB's wall time of a fit at each R (one block's time, shared by its replications, which follows the "
        "block's steps to the stopping rule); on the machine in 'The run', where two jobs ran side by side, so a "
        "difference between blocks is partly the machine's",
    )


def replications(*designs: str) -> Callable[[dict], Ours]:
    def figure(tables: dict) -> Ours:
        f = tables["fits"]
        f = f[f.design.isin(designs)]
        if f.empty:
            return Ours(None, f"the committed run has no fit of the {' or '.join(designs)} design")
        counts = "; ".join(
            f"{design}: " + ", ".join(f"{NAMES.get(m, m)} {g.rep.nunique()}" for m, g in d.groupby("method"))
            for design, d in f.groupby("design", sort=False)
        )
        return Ours(
            counts, "replications (simulated data sets) per design and method; the left-out ones are in 'Left out'"
        )

    return figure


FIGURES = {
    "ipip_loading_rmse_iwavb": stability("iwavb", "loading_rmse"),
    "ipip_loading_rmse_iwae": stability("iwae", "loading_rmse"),
    "ipip_intercept_rmse_iwavb": stability("iwavb", "intercept_rmse"),
    "ipip_intercept_rmse_iwae": stability("iwae", "intercept_rmse"),
    "ipip_covariance_rmse_iwavb": stability("iwavb", "covariance_rmse"),
    "ipip_covariance_rmse_iwae": stability("iwae", "covariance_rmse"),
    "ipip_time_iwavb": ipip_time("iwavb"),
    "ipip_time_iwae": ipip_time("iwae"),
    "ipip_refits": ipip_refits,
    "scree_elbow": scree_elbow,
    "normal_intercept_mse": normal_intercept_mse,
    "normal_time": normal_time,
    "normal_replications": replications("normal_p5"),
    "normal_iwavb_time_by_r": normal_iwavb_time_by_r,
    "mixture_replications": replications("mixture_p1", "mixture_p3"),
}
