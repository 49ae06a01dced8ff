"""The one writer of fit outputs, used by every study and method.

A fit folder holds ``estimates.csv`` (tidy, ``workflow/schemas/estimates.schema.yaml``),
``loss.csv`` (optimisation methods) and ``posterior.nc`` (ArviZ InferenceData, where the method
has draws), and last ``fit.json`` (``workflow/schemas/fit_record.schema.yaml``): its presence
means the fit is whole. ``fit_record`` builds the fields every record shares from a training
result, so a fit that diverged or did not converge says so the same way in every study.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt import io
from bayesirt.inference.samplers.posterior_summary import convergence

# a block's fields that depend on the machine (its timings, the processes that ran it): they go
# to a record's "timing", so that the rest of the record is reproducible bit for bit
MACHINE_BLOCK_FIELDS = ("wall_seconds", "compile_seconds", "processes", "startup_seconds", "resumed_at_step")


def how_converged(result) -> dict:
    """The record's account of how converged a fit is.

    Why it stopped (``stop_reason``), the slope of its loss over the last windows with its
    standard error (per epoch for minibatch fits, per step for full batch; negative is
    improvement), whether it hit ``max_steps`` while still improving and, under the noise rule,
    its gradient drift and tail averaging. Results not made by the training driver (e.g. EM)
    carry no slope.

    Parameters
    ----------
    result : inference.execution.training.FitResult
        The fit's result.

    Returns
    -------
    dict
        ``stop_reason``, ``loss_slope``, ``loss_slope_se``, ``loss_slope_unit``,
        ``max_steps_still_improving``, ``loss_still_improving``, ``gradient_drift``,
        ``gradient_drift_array``, ``averaged_steps`` ...
    """
    conv = result.convergence or {}
    diverged = result.extra.get("diverged_at_step") is not None
    default_reason = "diverged" if diverged else ("converged" if result.converged else "not_converged")
    slope, se = conv.get("slope"), conv.get("slope_se")
    return {
        "stop_reason": conv.get("stop_reason", default_reason),
        "loss_slope": None if slope is None else float(slope),
        "loss_slope_se": None if se is None else float(se),
        "loss_slope_unit": conv.get("slope_unit"),
        "max_steps_still_improving": bool(conv.get("max_steps_still_improving", False)),
        # the noise test of the last windows, whichever rule stopped the fit (None: no test)
        "loss_still_improving": conv.get("improving"),
        # noise rule only: the gradients' drift over the last window, the parameter array where
        # it was largest, and how many final steps the returned parameters average
        "gradient_drift": conv.get("gradient_drift"),
        "gradient_drift_array": conv.get("gradient_drift_array"),
        "averaged_steps": int(conv.get("averaged_steps") or 0),
    }


def fit_record(result, fields: dict, *, window: int, timing: dict | None = None) -> dict:
    """The fit record of an optimisation fit.

    ``fields`` (model, method, study, data set, condition, sizes, settings ...) followed by what
    every fit record carries: steps, convergence flag and reason, how converged
    (``how_converged``), the step a diverged fit stopped at, the final windowed loss, library
    versions, device and timings.

    Parameters
    ----------
    result : inference.execution.training.FitResult
        The fit's result.
    fields : dict
        The record's leading fields.
    window : int
        Steps over which the final loss is averaged.
    timing : dict, optional
        Further timings, added to the result's wall and compile seconds in ``timing``.

    Returns
    -------
    dict
        The record (``fit.json``).
    """
    window = min(window, len(result.losses))
    block = result.extra.get("block")
    return {
        **fields,
        "steps": int(result.steps),
        "converged": bool(result.converged),
        "convergence_reason": result.reason,
        **how_converged(result),
        "diverged_at_step": result.extra.get("diverged_at_step"),
        "final_loss": float(np.mean(result.losses[-window:])) if window else float("nan"),
        # a fit of a block (inference.execution.bulk): the block's size, the fit's position in it, the
        # program's width and the fit's group, the step it left the block and the program's
        # working memory; None for a fit on its own
        "block": {k: v for k, v in block.items() if k not in MACHINE_BLOCK_FIELDS} if block else None,
        "versions": io.library_versions(),
        "device": io.device_info(),
        # timings vary run to run; everything outside this field is reproducible bit for bit.
        # A fit of a block has its group's wall seconds and the block's compile seconds divided
        # by their sizes, and the block's own (with the worker processes that ran it, if any, and
        # the step its group resumed at from a checkpoint, inference.execution.checkpoints)
        "timing": {
            "wall_seconds": float(result.wall_seconds),
            "compile_seconds": float(result.compile_seconds),
            **(
                {
                    "block_wall_seconds": block["wall_seconds"],
                    "block_compile_seconds": block["compile_seconds"],
                    **{
                        f"block_{k}": block[k]
                        for k in ("processes", "startup_seconds", "resumed_at_step")
                        if k in block
                    },
                }
                if block
                else {}
            ),
            **(timing or {}),
        },
    }


def sample_record(result, fields: dict, *, max_r_hat: float = 1.01, min_ess: float = 100.0) -> dict:
    """Like ``fit_record`` for a Markov-chain fit (``inference.samplers.sampling.SampleResult``).

    Sweeps instead of steps, and "converged" means no non-finite state, every R-hat below
    ``max_r_hat`` and every bulk and tail ESS at least ``min_ess``; the reason gives the worst
    values. With one chain R-hat cannot be computed, so such a fit is not called converged.

    Parameters
    ----------
    result : inference.samplers.sampling.SampleResult
        The run's result.
    fields : dict
        The record's leading fields.
    max_r_hat : float
        Largest R-hat of a converged run.
    min_ess : float
        Smallest bulk and tail ESS of a converged run.

    Returns
    -------
    dict
        The record (``fit.json``).
    """
    diag = convergence(result.summary)
    if result.diverged:
        converged, reason = False, result.reason
    elif not np.isfinite(diag["max_r_hat"]):
        converged, reason = False, "R-hat not available (one chain?): convergence not assessed"
    else:
        worst = (
            f"max R-hat {diag['max_r_hat']:.4f}, min ESS bulk {diag['min_ess_bulk']:.0f}, "
            f"tail {diag['min_ess_tail']:.0f}"
        )
        converged = bool(diag["max_r_hat"] < max_r_hat and min(diag["min_ess_bulk"], diag["min_ess_tail"]) >= min_ess)
        reason = worst + ("" if converged else f" (needs R-hat < {max_r_hat:g} and ESS >= {min_ess:g})")
    return {
        **fields,
        "steps": int(result.n_sweeps),
        "converged": converged,
        "convergence_reason": reason,
        "diagnostics": diag,
        "versions": io.library_versions(),
        "device": io.device_info(),
        "timing": {"wall_seconds": float(result.wall_seconds), "compile_seconds": float(result.compile_seconds)},
    }


CONVERGED = "converged"


def convergence_status(record: dict) -> str:
    """One word (or phrase) for how a fit ended, the same in every table, figure and flag of a report.

    ``diverged`` (a non-finite loss or state), ``not converged`` (its own rule did not call it
    converged: a sampler's R-hat and ESS, an optimiser's tolerance), ``still improving`` (called
    converged, or stopped at ``max_steps``, while its loss was still falling beyond its noise)
    or ``converged``.

    Parameters
    ----------
    record : dict
        A fit record.

    Returns
    -------
    str
        The status.
    """
    if record.get("stop_reason") == "diverged" or record.get("diverged_at_step") is not None:
        return "diverged"
    if record.get("max_steps_still_improving") or (record.get("converged") and record.get("loss_still_improving")):
        return "still improving"
    if not record.get("converged", False):
        return "not converged"
    return CONVERGED


def is_converged(record: dict) -> bool:
    """``convergence_status(record) == "converged"``: what the studies' tables count.

    Parameters
    ----------
    record : dict
        A fit record.

    Returns
    -------
    bool
        Whether the fit converged.
    """
    return convergence_status(record) == CONVERGED


def fit_name(path) -> Path:
    """A fit's path without the block that fitted it, the name a report shows:
    ``n1k/mcar20/mfvi/blocks/block0/rep3`` -> ``n1k/mcar20/mfvi/rep3`` (a fit's files lie in
    ``rep<r>/`` of its block job's folder, ``blocks/block<b>/``)."""
    parts = Path(path).parts
    kept = [p for i, p in enumerate(parts) if p != "blocks" and (i == 0 or parts[i - 1] != "blocks")]
    return Path(*kept)


def convergence_flags(folder) -> tuple[str, pd.DataFrame]:
    """The fits under ``folder`` that did not converge, with why, for the report notebooks.

    Every ``fit.json`` below ``folder``; for optimisation fits, whether they hit ``max_steps``
    still improving.

    Parameters
    ----------
    folder : str or pathlib.Path
        The folder to search.

    Returns
    -------
    tuple of (str, pandas.DataFrame)
        A one-line verdict (Markdown) and a table with one row per flagged fit.
    """
    folder = Path(folder)
    rows = []
    # in the order of the fits' names (a block's fits after the block's number would differ)
    for path in sorted(folder.rglob("fit.json"), key=lambda p: fit_name(p.relative_to(folder))):
        rec = io.read_json(path)
        if is_converged(rec):
            continue
        rows.append(
            {
                "fit": str(fit_name(path.parent.relative_to(folder))),
                "method": rec.get("method"),
                "status": convergence_status(rec),
                "steps": rec.get("steps"),
                "stop_reason": rec.get("stop_reason", "not_converged"),
                "max_steps_still_improving": bool(rec.get("max_steps_still_improving", False)),
                "loss_still_improving": rec.get("loss_still_improving"),
                "loss_slope": rec.get("loss_slope"),
                "loss_slope_se": rec.get("loss_slope_se"),
                "loss_slope_unit": rec.get("loss_slope_unit"),
                "gradient_drift": rec.get("gradient_drift"),
                "reason": rec.get("convergence_reason"),
            }
        )
    flags = pd.DataFrame(
        rows,
        columns=[
            "fit",
            "method",
            "status",
            "steps",
            "stop_reason",
            "max_steps_still_improving",
            "loss_still_improving",
            "loss_slope",
            "loss_slope_se",
            "loss_slope_unit",
            "gradient_drift",
            "reason",
        ],
    )
    if flags.empty:
        return "Every fit converged, and no loss was still falling beyond its noise when it stopped.", flags
    improving = int(flags.max_steps_still_improving.sum())
    early = int((flags.loss_still_improving.eq(True) & ~flags.max_steps_still_improving).sum())
    return (
        f"**{len(flags)} fit(s) flagged**"
        + (f"; {improving} stopped at max_steps while still improving" if improving else "")
        + (
            f"; {early} stopped by the relative-tolerance rule while the loss was still falling beyond its "
            "noise (the trend test of the last windows)"
            if early
            else ""
        )
        + ": their estimates may not be final (table below). At the default config's demo scale (small data, "
        "short runs) flags are expected and the claims at the end weigh them; at paper scale a flag calls "
        "for a longer run."
    ), flags


def loss_table(losses) -> pd.DataFrame:
    """A loss history as a table: ``step`` (1-based) and ``loss``.

    Parameters
    ----------
    losses : array (steps,)
        The losses.

    Returns
    -------
    pandas.DataFrame
        Columns ``step`` and ``loss``.
    """
    losses = np.asarray(losses)
    return pd.DataFrame({"step": np.arange(1, len(losses) + 1), "loss": losses})


def write_fit(out, folder) -> None:
    """Write a fit's outputs: record, estimates, losses, idata.

    The record goes last, so its presence means the fit is whole.

    Parameters
    ----------
    out : studies.base.MethodResult
        The fit's outputs.
    folder : str or pathlib.Path
        Where they go (``estimates.csv``, ``loss.csv``, ``posterior.nc``, ``fit.json``).
    """
    folder = Path(folder)
    io.write_table(out.estimates, folder / "estimates.csv")
    if out.losses is not None:
        io.write_table(out.losses, folder / "loss.csv")
    if out.idata is not None:
        # a creation timestamp would make reruns differ; the fit record carries versions instead
        for group in out.idata.groups():
            getattr(out.idata, group).attrs.pop("created_at", None)
        with io.atomic_path(folder / "posterior.nc") as tmp:
            out.idata.to_netcdf(str(tmp), engine="h5netcdf")
    io.write_json(out.record, folder / "fit.json")
