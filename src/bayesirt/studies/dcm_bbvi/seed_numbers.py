"""The run's figures beside seed 002's numbers (``docs/reproduction/data/dcm_bbvi/seed_numbers.yaml``;
``bayesirt.studies.seed_numbers`` puts them on the page).

The notebook's numbers come from one data set of its design (complete responses); ours are over
the replications of the seed design without missing responses, from ``fits.csv`` (one row per
fit) and ``estimates.csv`` (the first replication's coefficients and their truth).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.studies.reproduction import describe
from bayesirt.studies.seed_numbers import Ours

DESIGN, MISSING = "seed", "mcar0"


def seed_fits(tables: dict, method: str) -> pd.DataFrame:
    fits = tables["fits"]
    return fits[(fits.design == DESIGN) & (fits.missing == MISSING) & (fits.method == method)]


def absent(method: str, what: str) -> Ours:
    return Ours(
        None,
        f"the committed run has no {method} fit of the seed's design with complete responses (fits.csv); "
        f"rerunning dcm_bbvi with {method} among the methods and collecting its tables gives {what}",
    )


def how_they_ended(f: pd.DataFrame) -> str:
    """``"; 20 of 20 runs became non-finite ..."``: a note on runs that did not reach their last
    step (empty when every run did)."""
    diverged = int((f.status == "diverged").sum())
    if not diverged:
        return ""
    return (
        f"; {diverged} of {len(f)} runs became non-finite before their last step and are scored at their last "
        "good state (the section on diagnostics says why)"
    )


def overall_accuracy(tables: dict) -> Ours:
    """The seed's full-model run: bbvi_seed where the run has it, else this project's BBVI."""
    oracle = tables["oracle"]
    oracle = oracle[(oracle.design == DESIGN) & (oracle.missing == MISSING)].pattern_accuracy
    for method, who in (("bbvi_seed", "the seed's BBVI as its notebook runs it"), ("bbvi", "this project's BBVI")):
        f = seed_fits(tables, method)
        if len(f):
            stand_in = "" if method == "bbvi_seed" else " (bbvi_seed, the notebook's own run, is not in the tables)"
            ours = seed_fits(tables, "bbvi") if method == "bbvi_seed" else f.iloc[:0]
            beside = f"; this project's BBVI (bbvi) {describe(ours.pattern_accuracy)}" if len(ours) else ""
            return Ours(
                describe(f.pattern_accuracy),
                f"{method}: {who}{stand_in}, pattern accuracy over data sets of the seed's design"
                f"{how_they_ended(f)}{beside}; the oracle (modal profiles at the true parameters) {describe(oracle)}",
            )
    return absent("bbvi_seed", "the seed's overall accuracy")


def beta_truth_accuracy(tables: dict) -> Ours:
    """The notebook's run that starts q(beta) at the true coefficients and updates only q(Z)."""
    f = seed_fits(tables, "bbvi_beta_truth_seed")
    if f.empty:
        return absent("bbvi_beta_truth_seed", "the accuracy with q(beta) started at the truth")
    return Ours(
        describe(f.pattern_accuracy), f"bbvi_beta_truth_seed: pattern accuracy over data sets{how_they_ended(f)}"
    )


def pi_truth_coefficients(tables: dict) -> Ours:
    """The notebook's run that keeps q(Z) at the true profiles and fits the coefficients."""
    f = seed_fits(tables, "bbvi_pi_truth_seed")
    if f.empty:
        return absent("bbvi_pi_truth_seed", "the coefficients fitted with q(Z) held at the truth")
    return Ours(
        describe(f.beta_rmse),
        "bbvi_pi_truth_seed: the coefficients' RMSE against the truth over data sets (the seed prints the "
        f"estimates of one data set){how_they_ended(f)}",
    )


def first_data_set(tables: dict) -> pd.DataFrame:
    """The true coefficients of the first data set of the seed design (complete responses), one
    row per coefficient, with the number of coefficients of its item."""
    e = tables["estimates"]
    e = e[(e.design == DESIGN) & (e.missing == MISSING) & (e.parameter == "beta")]
    if e.empty:
        return e
    e = e[(e.method == e.method.iloc[0]) & (e.rep == e.rep.min())].copy()
    e["width"] = e.groupby("item").category.transform("size")
    return e


def true_coefficients(tables: dict) -> Ours:
    """Where the generator's coefficients lie, by kind: intercepts, the main effect of a
    one-attribute item, the main effects and the interaction of a two-attribute item."""
    e = first_data_set(tables)
    if e.empty:
        return Ours(None, "estimates.csv has no coefficient of the seed design with complete responses")
    kinds = {
        "intercepts": e.category == 0,
        "one-attribute main effects": (e.width == 2) & (e.category == 1),
        "two-attribute main effects": (e.width == 4) & e.category.isin([1, 2]),
        "interactions": (e.width == 4) & (e.category == 3),
    }
    parts = [
        f"{name} {e.true[mask].min():.2f} to {e.true[mask].max():.2f}" for name, mask in kinds.items() if mask.any()
    ]
    return Ours(
        "; ".join(parts),
        "the true coefficients of the run's first data set of the seed's design (estimates.csv keeps one "
        "replication), drawn as the seed's generator draws them; the seed lists those of its one data set",
    )


def n_coefficients(tables: dict) -> Ours:
    """How many LCDM coefficients a data set of the seed design has (its Q-matrix decides)."""
    e = first_data_set(tables)
    if e.empty:
        return Ours(None, "estimates.csv has no coefficient of the seed design with complete responses")
    expected = 30 * np.mean([1, 2, 2, 4])  # Q rows uniform over 00, 01, 10, 11
    return Ours(
        f"{len(e)}",
        f"coefficients of the run's first data set of the seed's design (30 items; {expected:g} expected when "
        "the Q-matrix rows are drawn uniformly)",
    )


FIGURES = {
    "overall_accuracy": overall_accuracy,
    "beta_truth_accuracy": beta_truth_accuracy,
    "pi_truth_coefficients": pi_truth_coefficients,
    "true_coefficients": true_coefficients,
    "n_coefficients": n_coefficients,
}
