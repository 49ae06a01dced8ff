"""The data of a design: simulated training and held-out persons with their truth, or the
files of a prepared data set."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt import io
from bayesirt.data import simulate_mgrm as sm
from bayesirt.seeds import derive
from bayesirt.studies.amortized_ifa.conditions import STUDY
from bayesirt.studies.amortized_ifa.settings import Design


def simulate_design(design: Design, seed: int, heldout_fraction: float, parameter_seed: int | None = None):
    """Training persons (``n_persons``, as in the paper), held-out persons from the same
    population (``heldout_fraction`` times as many more) and the truth (abilities of the
    training persons only). Returns (train, holdout, truth).

    ``parameter_seed`` fixes the item parameters and factor correlations: the workflow gives
    every replication of a design the same one, so replications differ in persons and
    responses only, as in the paper (one truth, 100 response matrices; eq. 29's MSE is over
    replications of the same parameter)."""
    n = int(design.n_persons)
    n_hold = max(int(round(heldout_fraction * n)), 1)
    rm, truth = sm.from_preset(design.preset, seed, n + n_hold, parameter_seed=parameter_seed, **dict(design.simulate))
    attrs = {**rm.attrs, "preset": design.preset, "n_heldout": n_hold}
    train = io.ResponseMatrix(rm.responses[:n], rm.items, {**attrs, "part": "train"})
    hold = io.ResponseMatrix(rm.responses[n:], rm.items, {**attrs, "part": "holdout"})
    truth = truth[(truth.parameter != "ability") | (truth.person < n)].reset_index(drop=True)
    if rm.attrs.get("latent") == "mixture" and rm.attrs.get("n_factors", 1) > 1:
        truth = _mixture_latent_corr(truth, rm.attrs)
    return train, hold, truth


def _mixture_latent_corr(truth: pd.DataFrame, attrs: dict) -> pd.DataFrame:
    """The simulator's factor_corr of a mixture design is the within-component correlation S;
    a model with a normal prior estimates the latent's overall correlation. With components
    N(mu_k 1, sd^2 S) and weights w_k, Cov = sd^2 S + (sum_k w_k mu_k^2 - (sum_k w_k mu_k)^2) 1 1',
    whose correlation replaces S in the truth (the variances are equal, so no rescaling of loadings)."""
    w, m = np.asarray(sm.MIXTURE_WEIGHTS), np.asarray(sm.MIXTURE_MEANS)
    between = float(np.sum(w * m**2) - np.sum(w * m) ** 2)
    within = sm.MIXTURE_SD**2
    truth = truth.copy()
    rows = truth.parameter == "factor_corr"
    truth.loc[rows, "value"] = (within * truth.loc[rows, "value"] + between) / (within + between)
    return truth


def read_design_data(responses, holdout, truth=None):
    """(train, holdout, truth or None) from the files of a design's data."""
    train, hold = io.read_responses(responses), io.read_responses(holdout)
    if [it.name for it in train.items] != [it.name for it in hold.items]:
        raise io.DataFormatError(f"{holdout}: items differ from those of {responses}")
    return train, hold, (pd.read_csv(truth) if truth else None)


def data_folder(design: str, rep: int) -> str:
    """The folder of a simulated design's data set ``rep`` (the workflow's ``ifa_simulate`` output)."""
    return f"data/processed/{STUDY}/{design}/rep{rep}"


def run_replications(config: dict, specs: list) -> list:
    """The run's replications of ``specs`` (``conditions.Condition`` of simulated designs) as
    ``methods.Replication``: each its data set's files (``data_folder``) and the fit seed the
    workflow gives every fit of that data set."""
    from bayesirt.studies.amortized_ifa.methods import Replication  # JAX: not for the data jobs

    reps = []
    for spec in specs:
        folder = data_folder(spec.design, spec.rep)
        train, holdout, truth = read_design_data(
            f"{folder}/responses.parquet", f"{folder}/holdout.parquet", f"{folder}/truth.csv"
        )
        reps.append(
            Replication(train, holdout, truth, spec, derive(config["seed"], "fit", STUDY, spec.design, spec.rep))
        )
    return reps
