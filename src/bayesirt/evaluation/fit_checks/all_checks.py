"""Every check of one fit at once (``check``): item fit, local dependence and person fit, and
a summary.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from bayesirt.evaluation.fit_checks.item_fit import item_fit
from bayesirt.evaluation.fit_checks.latent_grid import LatentGrid
from bayesirt.evaluation.fit_checks.local_dependence import local_dependence
from bayesirt.evaluation.fit_checks.person_fit import person_fit


class FitChecks(NamedTuple):
    """Every check of one fit: per item, per person, and the summary."""

    items: pd.DataFrame  # item_fit's columns, then local dependence's (prefixed ld_), flagged = either
    persons: pd.DataFrame  # person_fit's columns
    summary: dict  # counts, shares and the largest residual correlation with its p-value


def check(
    y,
    grid: LatentGrid,
    n_parameters=None,
    n_replications: int = 50,
    seed=0,
    alpha: float = 0.05,
    n_groups: int = 10,
) -> FitChecks:
    """Item fit, local dependence and person fit of one fitted model, and a summary.

    Parameters
    ----------
    y : array (N, I)
        Integer responses 0..K_j-1, -1 for missing.
    grid : LatentGrid
        The model at the fit's item values.
    n_parameters : int or array (I,), optional
        As in ``item_fit``.
    n_replications : int
        Replications of the local-dependence p-values.
    seed : int
        Seed of the replications and of the item fit's completion of missing cells.
    alpha : float
        Level of every flag.
    n_groups : int
        As in ``item_fit``.

    Returns
    -------
    FitChecks
        ``items`` (one row per item; ``flagged`` when the item fit or the local dependence
        flags it), ``persons`` and ``summary``.
    """
    # the item fit's completion draws from a stream of its own, apart from the replications'
    completion = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(1,)))
    fit = item_fit(y, grid, n_groups=n_groups, n_parameters=n_parameters, alpha=alpha, seed=completion)
    ld = local_dependence(y, grid, n_replications=n_replications, seed=seed, alpha=alpha)
    items = fit.rename(columns={"flagged": "fit_flagged"}).merge(
        ld.rename(columns={c: f"ld_{c}" for c in ld.columns if c != "item"}), on="item"
    )
    items["flagged"] = items["fit_flagged"] | items["ld_flagged"]
    persons = person_fit(y, grid)
    finite = items["ld_max_q3"].notna()
    worst = int(items.loc[finite, "ld_max_q3"].idxmax()) if finite.any() else None
    summary = {
        "persons": int(np.asarray(y).shape[0]),
        "items": int(np.asarray(y).shape[1]),
        "latent_states": int(grid.log_weights.shape[0]),
        "observed_share": float((np.asarray(y) >= 0).mean()),
        "alpha": alpha,
        "items_flagged": int(items["flagged"].sum()),
        "items_misfit": int(items["fit_flagged"].sum()),
        "items_local_dependence": int(items["ld_flagged"].sum()),
        "items_pooled": int((items["pooled"] > 0).sum()),
        "persons_flagged_share": float(persons["flagged"].mean()),
        "max_q3": float(items.loc[worst, "ld_max_q3"]) if worst is not None else None,
        "max_q3_items": [worst, int(items.loc[worst, "ld_partner"])] if worst is not None else None,
        "max_q3_p_value": float(items.loc[worst, "ld_p_value"]) if worst is not None else None,
        "replications": n_replications,
        "reference": (
            "item fit: leave-one-out predictives at the estimates, the other items' missing cells"
            " completed by one draw from the model; local dependence: parametric bootstrap at the"
            " estimates, each person's missing cells held fixed"
        ),
    }
    return FitChecks(items, persons, summary)
