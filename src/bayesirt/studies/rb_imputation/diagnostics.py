"""Diagnostics behind rb_imputation's reproduction page: whether the imputation objectives' gap
to zero-fill is seed 000's method or this implementation, and whether the figures would move if
the fits ran longer.

On the seed's design (the config's ``seed_dataset``: the RWA data subsampled to 500 persons, 15%
MCAR), with the run's own masks, imputation models, complete-data reference and fit seeds (the
workflow's files; ``inputs`` names them, and ``tools/reproduction.py diagnose`` builds them
first), each of ``CONDITIONS`` is fitted as the study fits it, then again with at least twice
the steps (the block's most steps, doubled, for every mask: no early stop). Three questions:

1. **Which way does each objective pull?** The signed mean of log(a_fit / a_complete) over the
   items: an objective whose imputations carry information the observed cells do not have
   moves every discrimination one way, where sampling noise moves them both ways.
2. **Is the gap the objective's target or the code's?** ``importance_weighted`` (this
   project's) uses the same imputations, cell probabilities and training, but divides each copy
   by the probability of its imputation, so that it targets the observed-data likelihood (the
   right one under MCAR) as M grows. If it lands on zero-fill's fit where the seed's objective
   does not, the seed's objective, not this implementation, makes the gap: it adds the
   imputation model's picture of the hidden cells to the likelihood.
3. **Would longer fits move the verdicts?** (issue 46 item 5) The change of each condition's
   discrimination RMSE when its steps are doubled, beside the spread of the figure over masks.

A second table reads every fit of the study's full data set from the run's folder (no fitting):
the same signed bias for each missingness design, objective and mask. A third refits, on the full
data set under the seed's mechanism, the conditions its page rows compare (``FULL_DATA_CONDITIONS``),
at the run's training and doubled, as the first does on the seed's design: the full-data fits all
stop with their loss still falling, so those rows keep a verdict only where doubling does not move
it. The page's section is ``diagnostics_section``.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt import records
from bayesirt.seeds import derive
from bayesirt.studies import design_conditions
from bayesirt.studies.rb_imputation import conditions as rb_conditions
from bayesirt.studies.rb_imputation.conditions import (
    SEED_MISSING,
    STUDY,
    Condition,
    condition_names,
    missing_designs,
    parse_condition,
)

# (objective, M): every condition a claim of the page compares on the seed's design (zero-fill,
# the copies objectives at the seed's M = 3, the seed's own among them, the M -> inf limit of the
# copies, and ours at the ends of the config's sweep over M), then this project's
# importance-weighted objective at the seed's M and at ten times it
CONDITIONS = (
    ("zero_fill", None),
    ("naive_average", 3),
    ("rao_blackwell_seed", 3),
    ("rao_blackwell_batch", 3),
    ("rao_blackwell", 3),
    ("rao_blackwell", 1),
    ("rao_blackwell", 10),
    ("exact_marginal", None),
    ("importance_weighted", 3),
    ("importance_weighted", 30),
)
# the conditions the full data set's rows compare (15% MCAR): each objective at the seed's M against
# zero-fill, the Rao-Blackwellized against naive averaging, and the sweep's ends (M = 1 and 10)
FULL_DATA_CONDITIONS = tuple(c for c in CONDITIONS if c[0] != "importance_weighted")
FIT_COLUMNS = [
    "dataset",
    "rep",
    "condition",
    "objective",
    "n_copies",
    "steps",
    "converged",
    "discrimination_rmse",
    "log_discrimination_bias",
    "steps_doubled",
    "discrimination_rmse_doubled",
    "log_discrimination_bias_doubled",
    "seconds",
]
BIAS_COLUMNS = ["dataset", "missing", "condition", "objective", "n_copies", "rep", "log_discrimination_bias"]


def condition_name(objective: str, copies: int | None) -> str:
    return objective if copies is None else f"{objective}_M{copies}"


def seed_dataset(config: dict) -> str:
    name = config["studies"][STUDY].get("seed_dataset")
    if not name:
        raise ValueError(
            f"config key 'studies.{STUDY}.seed_dataset' names no data set: the diagnostics need the seed's"
        )
    return name


def reference_file(dataset: str) -> str:
    return f"results/{STUDY}/{dataset}/reference/estimates.csv"


def mask_files(dataset: str, rep: int) -> tuple[str, str]:
    """(masked responses, imputation model) of one mask, as the workflow writes them."""
    return (
        f"data/processed/{dataset}/missing/{SEED_MISSING}/rep{rep}/responses.parquet",
        f"results/{STUDY}/{dataset}/{SEED_MISSING}/rep{rep}/imputation/model.npz",
    )


def inputs(config: dict, n_data_sets: int, parts=None) -> list[str]:
    """The workflow's files the diagnostics (``parts``, default all) read: a refitted design's
    reference fit, its masks and their imputation models (the seed's design, and the full data
    set's for ``full_data_fits``), and for ``full_data_bias`` the summary tables of the study's
    full data set (whose rule needs every fit that table reads)."""
    study, parts = config["studies"][STUDY], parts or PARTS
    refitted = [seed_dataset(config)] if "seed_design_fits" in parts else []
    refitted += [study["dataset"]] if "full_data_fits" in parts else []
    files = []
    for dataset in refitted:
        files.append(reference_file(dataset))
        for rep in range(min(n_data_sets, study["replications"])):
            files += mask_files(dataset, rep)
    if "full_data_bias" in parts:
        files += [f"results/{STUDY}/{study['dataset']}/{m}/summary.csv" for m in missing_designs(study)]
    return files


def log_ratio_bias(estimates: pd.DataFrame, reference: pd.DataFrame) -> float:
    """Mean over items of log(a_fit / a_complete): the variational means of the discriminations."""
    from bayesirt.studies.rb_imputation.tables import vi_means

    keys = ["item", "scale"]
    fit = vi_means(estimates[estimates.parameter == "discrimination"])[keys + ["mean"]]
    ref = vi_means(reference[reference.parameter == "discrimination"])[keys + ["mean"]]
    both = fit.merge(ref, on=keys, suffixes=("", "_ref"), validate="one_to_one")
    if len(both) != len(ref):
        raise ValueError("a fit and the reference do not cover the same items")
    return float(np.mean(np.log(both["mean"] / both["mean_ref"])))


def rmse(estimates: pd.DataFrame, reference: pd.DataFrame) -> float:
    """The discrimination RMSE against the complete-data fit, as the study's tables compute it."""
    from bayesirt.studies.rb_imputation.tables import error_table

    table = error_table(estimates, reference, ("discrimination",))
    return float(table[(table.scale == "all") & (table.against == "complete_data")].rmse.iloc[0])


def fit_condition(conds: list, masks: list, settings, reference: pd.DataFrame, doubled_steps=None):
    """One condition on every mask (``conds``: its ``conditions.Condition`` on each; ``masks``:
    each mask's data and seed), as one block (``methods.fit_block``), with the study's
    ``settings`` (its training), or for exactly ``doubled_steps`` steps."""
    from bayesirt.studies.rb_imputation import methods

    if doubled_steps is not None:
        steps = {"min_steps": doubled_steps, "max_steps": doubled_steps}
        settings = replace(settings, training={**settings.training, **steps})
    reps = [methods.Replication(data, cond, seed) for cond, (data, seed) in zip(conds, masks, strict=True)]
    t0 = time.perf_counter()
    outs = methods.fit_block(reps, settings)
    seconds = (time.perf_counter() - t0) / len(reps)
    return [
        {
            "steps": int(o.record["steps"]),
            "converged": records.is_converged(o.record),
            "rmse": rmse(o.estimates, reference),
            "bias": log_ratio_bias(o.estimates, reference),
            "seconds": round(seconds, 2),
        }
        for o in outs
    ]


def seed_design_fits(config: dict, n_data_sets: int, root: Path = Path("."), progress=print) -> pd.DataFrame:
    """Every condition of ``CONDITIONS`` on the first ``n_data_sets`` masks of the seed's
    design, at the run's training and with the steps doubled: one row per fit."""
    return refits(config, n_data_sets, seed_dataset(config), CONDITIONS, root, progress)


def full_data_fits(config: dict, n_data_sets: int, root: Path = Path("."), progress=print) -> pd.DataFrame:
    """``FULL_DATA_CONDITIONS`` on the first ``n_data_sets`` masks of the study's full data set
    (the seed's mechanism), at the run's training and with the steps doubled."""
    dataset = config["studies"][STUDY]["dataset"]
    return refits(config, n_data_sets, dataset, FULL_DATA_CONDITIONS, root, progress)


def doubled_reference(config: dict, dataset: str, root: Path) -> pd.DataFrame:
    """The estimates of ``dataset``'s complete-data reference refitted for exactly twice the steps
    its run's fit took (its data and seed as the workflow's ``fit_reference``): the doubled fits
    are compared with it, since the reference, too, may stop with its loss still falling."""
    from bayesirt.studies.rb_imputation import data, methods
    from bayesirt.studies.rb_imputation.conditions import COMPLETE
    from bayesirt.studies.rb_imputation.settings import Settings

    record = json.loads((root / reference_file(dataset)).with_name("fit.json").read_text())
    steps = {"min_steps": 2 * int(record["steps"]), "max_steps": 2 * int(record["steps"])}
    base = Settings.from_config(config)
    settings = replace(base, block_size=1, training={**base.training, **steps})
    seed = derive(config["seed"], "fit", STUDY, dataset, "reference")  # the workflow's reference_seed
    responses = data.read(root / f"data/processed/{dataset}/responses.parquet")
    return methods.fit(COMPLETE, responses, seed=seed, settings=settings, fields={"dataset": dataset}).estimates


def refits(config: dict, n_data_sets: int, dataset: str, conditions, root: Path, progress) -> pd.DataFrame:
    """``conditions`` ((objective, M) pairs) on the first ``n_data_sets`` masks of ``dataset``
    under the seed's mechanism, with the run's masks, imputation models, reference and fit seeds,
    at the run's training (against the run's reference) and with the steps doubled (against the
    reference refitted with its steps doubled, ``doubled_reference``): one row per fit."""
    from bayesirt.studies.rb_imputation import data
    from bayesirt.studies.rb_imputation.settings import Settings

    root = Path(root)
    n = min(n_data_sets, config["studies"][STUDY]["replications"])
    reference = pd.read_csv(root / reference_file(dataset))
    doubled_ref = doubled_reference(config, dataset, root)
    masks = []
    for rep in range(n):
        responses, model = (root / f for f in mask_files(dataset, rep))
        seed = derive(config["seed"], "fit", STUDY, dataset, SEED_MISSING, rep)  # the workflow's replication_seed
        masks.append((data.read(responses, None, model), seed))
    settings = replace(Settings.from_config(config), block_size=n)
    rows = []
    for objective, copies in conditions:
        name = condition_name(objective, copies)
        conds = [Condition(dataset, name, objective, SEED_MISSING, rep, copies) for rep in range(n)]
        first = fit_condition(conds, masks, settings, reference)
        doubled_steps = 2 * max(f["steps"] for f in first)
        second = fit_condition(conds, masks, settings, doubled_ref, doubled_steps)
        for rep, (a, b) in enumerate(zip(first, second, strict=True)):
            rows.append(
                {
                    "dataset": dataset,
                    "rep": rep,
                    "condition": name,
                    "objective": objective,
                    "n_copies": copies,
                    "steps": a["steps"],
                    "converged": a["converged"],
                    "discrimination_rmse": a["rmse"],
                    "log_discrimination_bias": a["bias"],
                    "steps_doubled": b["steps"],
                    "discrimination_rmse_doubled": b["rmse"],
                    "log_discrimination_bias_doubled": b["bias"],
                    "seconds": a["seconds"] + b["seconds"],
                }
            )
        mean = lambda key, fits: np.mean([f[key] for f in fits])
        progress(
            f"{dataset} {name}: RMSE {mean('rmse', first):.3f} at {mean('steps', first):.0f} steps, "
            f"{mean('rmse', second):.3f} at {doubled_steps}; log-discrimination bias {mean('bias', first):+.3f}"
        )
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


def full_data_bias(config: dict, root: Path = Path(".")) -> pd.DataFrame:
    """The signed log-discrimination bias of every fit of the study's full data set, read from
    the run's folder (its blocks' estimates and the reference's)."""
    study, root = config["studies"][STUDY], Path(root)
    dataset = study["dataset"]
    reference = pd.read_csv(root / reference_file(dataset))
    rows = []
    for missing in missing_designs(study):
        for rep in range(study["replications"]):
            for name in condition_names(study):
                objective, copies = parse_condition(name)
                fit = Condition(dataset, name, objective, missing, rep, copies)
                folder = design_conditions.fit_folder(rb_conditions, config, fit)
                estimates = pd.read_csv(root / folder / "estimates.csv")
                rows.append(
                    {
                        "dataset": dataset,
                        "missing": missing,
                        "condition": name,
                        "objective": objective,
                        "n_copies": copies,
                        "rep": rep,
                        "log_discrimination_bias": log_ratio_bias(estimates, reference),
                    }
                )
    return pd.DataFrame(rows, columns=BIAS_COLUMNS)


# The page's diagnostic tables, from the workflow's files under the working directory; the full
# data's bias reads every fit of the run, so it takes no number of data sets.
PARTS = {
    "seed_design_fits": seed_design_fits,
    "full_data_bias": lambda config, n_data_sets: full_data_bias(config),
    "full_data_fits": full_data_fits,
}


def paired_doubling(fits: pd.DataFrame, *conditions: str):
    """The doubling check (``reproduction_claims.doubling``) of the paired difference of two
    conditions' discrimination RMSE (``conditions``: the one judged, then its baseline), or None
    where the diagnostics did not refit both."""
    from bayesirt.studies.reproduction_claims import doubling

    a, b = (fits[fits.condition == c].set_index("rep") for c in conditions)
    if a.empty or b.empty:
        return None
    return doubling(
        a.discrimination_rmse - b.discrimination_rmse, a.discrimination_rmse_doubled - b.discrimination_rmse_doubled
    )
