"""The data of one vibo condition: simulated 2PL or GRM responses with their truth
(``simulate_condition``), or a prepared real data set split into training and new persons
(``observed_condition``, empty truth); then the condition's missingness and the scored cells
(``hide_cells``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt import io, tables
from bayesirt.data.missingness import inject
from bayesirt.data.simulate import PRESETS, simulate_factorized_grm
from bayesirt.data.simulate_binary import simulate_binary
from bayesirt.models import grm
from bayesirt.models.twopno import check_binary_responses
from bayesirt.seeds import derive
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.vibo.conditions import STUDY, has_truth
from bayesirt.studies.vibo.settings import design_model, design_shape, grm_shape, heldout_persons
from bayesirt.studies.vibo.tables import AXES


def simulate_grm(seed: int, n_persons: int, preset: str):
    """GRM responses shaped like ``preset`` (its items and categories, as one scale) and the
    truth in this study's layout: discrimination (item), cut (item, category k = 1..C-1, on the
    scale of ``models.irt2pl``: P(Y >= k) = sigmoid(a theta - cut_k)) and ability (person).
    The draws are ``data.simulate.simulate_factorized_grm``'s (thresholds tau, cut = a tau)."""
    n_items, n_categories = grm_shape(preset)
    rm, table = simulate_factorized_grm(
        seed,
        n_persons,
        [n_items],
        n_categories,
        scale_names=[preset],
        item_prefix=PRESETS[preset].get("item_prefix", "Q"),
    )
    pick = lambda p: table[table.parameter == p].sort_values(["item", "person", "category"])["value"].to_numpy()
    a = pick("discrimination")
    base, inc = pick("base_difficulty"), pick("increments").reshape(n_items, n_categories - 2)
    tau = np.asarray(grm.ordered_cuts(base, inc))
    truth = tables.long_table(
        {"discrimination": a, "cut": a[:, None] * tau, "ability": pick("ability")},
        AXES,
        ["item", "person", "category"],
        "value",
        start={"category": 1},
    )
    rm.attrs.update(
        {
            "model": "grm",
            "preset": preset,
            "parametrization": "P(Y >= k) = sigmoid(a * theta - cut_k), cut_k = a * tau_k",
        }
    )
    return rm, truth


def simulate_condition(
    design: dict, missing: str, seed: int, *, score_fraction: float, heldout_fraction: float, missing_seed: int
):
    """Complete data from ``seed`` (shared by a replication's missingness conditions), then the
    condition's missingness from ``missing_seed``. Returns (train, hidden, holdout, truth):
    the training matrix with the design's missing cells and the scored cells set to -1, the
    mask of the scored cells with their true responses (a table person, item, response), the
    new persons with the design's missingness, and the truth of the training persons."""
    n, j = design_shape(design)
    n_hold = heldout_persons(n, heldout_fraction)
    if design_model(design) == "grm":
        rm, truth = simulate_grm(seed, n + n_hold, design["preset"])
    else:
        rm, truth = simulate_binary(seed, n + n_hold, j, model=design_model(design))
    attrs = {**rm.attrs, "design_missing": missing}
    train = io.ResponseMatrix(rm.responses[:n], rm.items, {**attrs, "part": "train"})
    hold = io.ResponseMatrix(rm.responses[n:], rm.items, {**attrs, "part": "holdout"})
    train, hidden, hold = hide_cells(train, hold, missing, missing_seed=missing_seed, score_fraction=score_fraction)
    truth = truth[(truth.parameter != "ability") | (truth.person < n)].reset_index(drop=True)
    return train, hidden, hold, truth


def hide_cells(train, hold, missing: str, *, missing_seed: int, score_fraction: float):
    """The condition's missingness on a replication's persons, simulated or real alike: the
    design's missingness (``missing``) in the training and the new persons, then a further
    ``score_fraction`` of the training persons' still-observed cells hidden MCAR and scored.
    A 0% condition (``mcar0``) hides nothing: it is the complete-data condition, so its fits
    see every response (a prior expert per missing response then adds none), and it scores
    the fits on the truth and the new persons only, with no missing-response prediction.
    Returns (train, hidden, hold), ``hidden`` the scored cells with the responses they hid
    (a table person, item, response; empty at 0%)."""
    kind, rate = parse_missing(missing)
    if rate == 0:
        return train, pd.DataFrame({c: np.zeros(0, np.int64) for c in ("person", "item", "response")}), hold
    train = inject(train, kind, rate, seed=missing_seed)[0]
    hold = inject(hold, kind, rate, seed=missing_seed + 1)[0]
    observed_share = float(np.mean(train.responses != -1))
    before = np.asarray(train.responses)
    train, scored = inject(train, "mcar", score_fraction * observed_share, seed=missing_seed + 2)
    rows, cols = np.nonzero(scored)
    hidden = pd.DataFrame({"person": rows, "item": cols, "response": before[rows, cols]})
    return train, hidden, hold


def empty_truth() -> pd.DataFrame:
    """The truth table of a real data set: no rows (real data have no true values)."""
    return pd.DataFrame(columns=["parameter", "item", "person", "category", "value"])


def observed_condition(
    responses,
    design: dict,
    missing: str,
    seed: int,
    *,
    score_fraction: float,
    heldout_fraction: float,
    missing_seed: int,
    where: str,
):
    """A prepared real data set as one condition of a ``dataset`` design. Persons who answered
    no item are left out (they tell nothing about items or predictions, and the per-person fits
    refuse them; their number is in the attributes). From ``seed`` (one replication, shared by
    its missingness conditions) a random ``heldout_fraction`` of the others is set apart as the
    new persons (held-out log-likelihood, amortized scoring), the rest train; then the
    condition's missingness on top of the natural one (``hide_cells``), the scored cells'
    responses kept. A ``2pl`` design needs binary data (checked, naming the first offending
    item and person). Returns (train, hidden, holdout, truth) as ``simulate_condition`` does,
    with an empty truth."""
    y = np.asarray(responses.responses)
    if design_model(design) == "2pl":
        y = check_binary_responses(y, [it.name for it in responses.items], where=where)
    answered = (y != -1).any(axis=1)
    natural_rate = float(np.mean(y == -1))
    y = y[answered]
    n_all = y.shape[0]
    n_hold = int(round(heldout_fraction * n_all))
    if not 1 <= n_hold < n_all - 1:
        raise ValueError(
            f"{where}: {n_all} persons cannot be split into training and held-out persons with "
            f"heldout_fraction {heldout_fraction}"
        )
    order = np.random.default_rng(np.random.SeedSequence([int(seed), 4])).permutation(n_all)
    hold_rows, train_rows = np.sort(order[:n_hold]), np.sort(order[n_hold:])
    attrs = {
        **responses.attrs,
        "model": design_model(design),
        "design_missing": missing,
        "natural_missing_rate": natural_rate,
        "persons_without_responses_left_out": int((~answered).sum()),
    }
    train = io.ResponseMatrix(y[train_rows], list(responses.items), {**attrs, "part": "train"})
    hold = io.ResponseMatrix(y[hold_rows], list(responses.items), {**attrs, "part": "holdout"})
    train, hidden, hold = hide_cells(train, hold, missing, missing_seed=missing_seed, score_fraction=score_fraction)
    return train, hidden, hold, empty_truth()


def condition_data(
    design: dict,
    missing: str,
    seed: int,
    *,
    score_fraction: float,
    heldout_fraction: float,
    missing_seed: int,
    responses=None,
    where: str = "",
):
    """The data of one condition, simulated (``simulate_condition``) or, for a design that names
    a data set, from its prepared ``responses`` (``observed_condition``)."""
    fractions = {"score_fraction": score_fraction, "heldout_fraction": heldout_fraction, "missing_seed": missing_seed}
    if not has_truth(design):
        return observed_condition(responses, design, missing, seed, where=where, **fractions)
    return simulate_condition(design, missing, seed, **fractions)


def data_set(config: dict, design: str, missing: str, rep: int, score_fraction: float | None = None):
    """(train, hidden, holdout, truth, fit seed) of one replication of ``design`` under
    ``missing``, rebuilt from the validated ``config`` as the workflow builds it (the same data,
    masks and fit seed; ``score_fraction`` None: the config's), for the page's diagnostics."""
    study, seed = config["studies"][STUDY], config["seed"]
    fraction = study["score_fraction"] if score_fraction is None else score_fraction
    train, hidden, holdout, truth = condition_data(
        study["designs"][design],
        missing,
        derive(seed, "data", "vibo", design, rep),
        score_fraction=fraction,
        heldout_fraction=study["heldout_fraction"],
        missing_seed=derive(seed, "missing", "vibo", design, missing, rep),
    )
    return train, hidden, holdout, truth, derive(seed, "fit", "vibo", design, missing, str(rep))
