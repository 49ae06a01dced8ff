"""The five checks an imputation model must pass before a fit uses it (seed 000, section 4.3).

1. fitted: the model has been trained;                                   (error)
2. coverage: every IRT item is an item of the imputation model;          (error)
3. variable type: every item is ordinal or binary, not continuous;       (error)
4. convergence: at least one converged sub-model per item;               (warning)
5. PSIS k-hat: the best sub-model of each item has Pareto k-hat < 0.7.   (warning)

"Best" is the sub-model with the largest stacking weight (the one the imputations lean on
most). Checks 4-5 warn rather than stop: the mixture still imputes, but less reliably.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np

log = logging.getLogger("bayesirt")

KHAT_LIMIT = 0.7
ALLOWED_TYPES = ("ordinal", "binary")


class ImputationModelError(ValueError):
    """The imputation model cannot be used for this fit; the message says why."""


class ImputationModelWarning(UserWarning):
    """The imputation model can be used but one of its diagnostics is poor."""


def validate_imputation_model(model, item_names, n_categories=None) -> dict:
    """Run the five checks; raise ``ImputationModelError`` on a failing check, warn on a poor
    diagnostic; return a record of all checks (for the fit's JSON record)."""
    record: dict = {}
    if model is None or not getattr(model, "fitted", False):
        raise ImputationModelError("imputation model check 1 (fitted): the model has not been fitted")
    record["fitted"] = True

    names = list(model.item_names)
    missing = [name for name in item_names if name not in names]
    if missing:
        raise ImputationModelError(
            f"imputation model check 2 (coverage): IRT item(s) {missing} are not in the imputation "
            f"model, whose items are {names}"
        )
    if n_categories is not None:
        for name, k in zip(item_names, n_categories):
            k_model = int(model.n_categories[names.index(name)])
            if int(k) != k_model:
                raise ImputationModelError(
                    f"imputation model check 2 (coverage): item '{name}' has {int(k)} categories in "
                    f"the data but {k_model} in the imputation model"
                )
    record["coverage"] = True

    bad = [(n, t) for n, t in zip(names, model.item_types) if t not in ALLOWED_TYPES]
    if bad:
        raise ImputationModelError(
            "imputation model check 3 (variable type): items must be ordinal or binary; got "
            + ", ".join(f"'{n}' is {t}" for n, t in bad)
        )
    record["variable_type"] = True

    rows = [names.index(name) for name in item_names]
    converged = np.asarray(model.converged)[rows]
    none = [item_names[r] for r in range(len(rows)) if not converged[r].any()]
    record["convergence"] = {
        "ok": not none,
        "items_without_converged_submodel": none,
        "converged_submodels": int(np.asarray(model.converged).sum()),
        "submodels": int(np.asarray(model.converged).size),
    }
    if none:
        _warn(f"imputation model check 4 (convergence): no converged sub-model for item(s) {none}")

    best = np.asarray(model.weights)[rows].argmax(-1)
    khat = np.asarray(model.pareto_k)[rows, best]
    high = {item_names[r]: round(float(khat[r]), 3) for r in range(len(rows)) if not khat[r] < KHAT_LIMIT}
    record["pareto_k"] = {
        "ok": not high,
        "limit": KHAT_LIMIT,
        "max_best_khat": float(np.max(khat)),
        "items_over_limit": high,
    }
    if high:
        _warn(f"imputation model check 5 (PSIS k-hat): best sub-model's Pareto k-hat >= {KHAT_LIMIT} for {high}")
    return record


def _warn(message: str) -> None:
    log.warning(message)
    warnings.warn(message, ImputationModelWarning, stacklevel=3)
