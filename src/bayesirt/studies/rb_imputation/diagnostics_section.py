"""The rb_imputation reproduction page's diagnostics section (``diagnostics`` makes its tables):
each refitted design's table of conditions at the run's steps and doubled, sentences written from
their numbers, and the full data's pulls."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.evaluation.verdicts import mean_interval


def summary(fits: pd.DataFrame) -> pd.DataFrame:
    """A row per condition: the figure at the run's steps and doubled, and the pull."""
    rows = []
    for name, f in fits.groupby("condition", sort=False):
        mean, low, high, _ = mean_interval(f.discrimination_rmse)  # Student's t, as the verdicts'
        moved = f.discrimination_rmse_doubled - f.discrimination_rmse
        rows.append(
            {
                "condition": f"`{name}`" + (" (the seed's)" if name.startswith("rao_blackwell_seed") else ""),
                "masks": len(f),
                "steps (median); doubled": f"{f.steps.median():.0f}; {f.steps_doubled.iloc[0]}",
                "discrimination RMSE (95% interval)": f"{mean:.3f} ± {(high - low) / 2:.3f}",
                "doubled": f"{f.discrimination_rmse_doubled.mean():.3f}",
                "largest move on doubling": f"{moved.abs().max():.3f}",
                "mean log(a / a complete)": f"{f.log_discrimination_bias.mean():+.3f}",
            }
        )
    return pd.DataFrame(rows)


def pull(bias: float) -> str:
    return "raises" if bias > 0 else "lowers"


def findings(fits: pd.DataFrame, bias: pd.DataFrame | None = None) -> list[str]:
    """What the tables say, in sentences written from their numbers."""
    by = fits.groupby("condition", sort=False)
    rmse, b = by.discrimination_rmse.mean(), by.log_discrimination_bias.mean()
    lines = []
    zero = "zero_fill"
    if zero in rmse:
        pulls = [
            f"`{c}` {pull(b[c])} them by {abs(np.expm1(b[c])):.1%}"
            for c in rmse.index
            if c != zero and abs(b[c]) > 2 * abs(b[zero])
        ]
        lines.append(
            f"Against the complete-data fit, zero-fill's discriminations are off by {b[zero]:+.3f} on the log scale "
            "(mean over items and masks). "
            + (
                "On average over items and masks, the imputation objectives move them one way: "
                + "; ".join(pulls)
                + "."
                if pulls
                else "No imputation objective moves them more than twice as far on average."
            )
        )
    iw = [c for c in rmse.index if c.startswith("importance_weighted")]
    seed = next((c for c in rmse.index if c.startswith("rao_blackwell_seed")), None)
    if iw and zero in rmse and seed:
        best = iw[-1]
        lines.append(
            f"`{best}` (this project's, the same imputed copies divided by the probability of their imputation) "
            f"has discrimination RMSE {rmse[best]:.3f} against zero-fill's {rmse[zero]:.3f} and the seed's "
            f"`{seed}` {rmse[seed]:.3f}"
            + (f" ({', '.join(f'`{c}` {rmse[c]:.3f}' for c in iw[:-1])})" if len(iw) > 1 else "")
            + ". "
            + (
                "With the same copies, cell probabilities and training, an objective whose target is the observed-"
                "data likelihood lands near zero-fill: the seed's objective's gap is its target (it scores the "
                "imputation model's guesses as responses), not this implementation."
                if abs(rmse[best] - rmse[zero]) < abs(rmse[seed] - rmse[zero]) / 2
                else "It does not land near zero-fill either: the objective's target alone does not explain the gap."
            )
        )
    lines.append(doubling_finding(fits))
    if bias is not None and not bias.empty:
        pulled = bias.groupby(["missing", "condition"], sort=False).log_discrimination_bias.mean().unstack(0)
        zero_row = pulled.loc[zero] if zero in pulled.index else None
        if zero_row is not None:
            worst = pulled.drop(index=zero).abs().max()
            lines.append(
                f"On the full data ({bias.dataset.iloc[0]}), zero-fill's log-discrimination bias is "
                + ", ".join(f"{v:+.3f} ({m})" for m, v in zero_row.items())
                + "; the largest of an imputation objective "
                + ", ".join(f"{v:.3f} ({m})" for m, v in worst.items())
                + " in absolute value (the table below)."
            )
    return lines


def doubling_finding(fits: pd.DataFrame) -> str:
    """How far doubling the steps moves the refits' discrimination RMSE, against the spread over masks."""
    moved = (fits.discrimination_rmse_doubled - fits.discrimination_rmse).abs()
    spread = fits.groupby("condition", sort=False).discrimination_rmse.std(ddof=1).median()
    return (
        f"Doubling the steps (from {fits.steps.median():.0f} to at least {fits.steps_doubled.min()}) moves a fit's "
        f"discrimination RMSE by {moved.median():.4f} (median; at most {moved.max():.4f}), against a spread over "
        f"masks of {spread:.4f} (median standard deviation of a condition): "
        + ("every move is smaller than that spread." if moved.max() < spread else "some moves are not.")
    )


def bias_table(bias: pd.DataFrame) -> pd.DataFrame:
    """Mean log(a / a complete) per condition (rows) and missingness design (columns)."""
    table = bias.groupby(["condition", "missing"], sort=False).log_discrimination_bias.mean().unstack("missing")
    return table.map(lambda v: f"{v:+.3f}").reset_index().rename(columns={"condition": "condition (full data)"})


def section(tables: dict, facts: dict) -> str:
    """The reproduction page's section: the seed design's table and findings, the full data's pulls,
    then the full data's refits."""
    from bayesirt.studies.reproduction import markdown_table
    from bayesirt.studies.reproduction_diagnostics import made_by, part_facts

    fits, bias = tables.get("seed_design_fits"), tables.get("full_data_bias")
    if fits is None or fits.empty:
        return ""
    parts = [
        "## Diagnostics: the seed's method or this implementation?",
        "",
        f"Each objective refitted on the first {fits.rep.nunique()} masks of the seed's design (500 persons, "
        "15% MCAR), with the run's masks, imputation models, reference and fit seeds, at the run's training and "
        "again with the steps doubled (the doubled fits against the complete-data reference refitted with its steps "
        "doubled too: it also stops with its loss still falling); the signed mean of log(a / a complete) over "
        "items says which way an objective pulls the discriminations "
        f"({made_by(part_facts(facts, 'seed_design_fits'))}; "
        "`bayesirt.studies.rb_imputation.diagnostics`).",
        "",
        *markdown_table(summary(fits)),
        "",
        *[f"- {line}" for line in findings(fits, bias)],
        "",
    ]
    if bias is not None and not bias.empty:
        parts += [
            "Mean log(a / a complete) over items and masks of every fit of the full data, read from the run:",
            "",
            *markdown_table(bias_table(bias)),
            "",
        ]
    full = tables.get("full_data_fits")
    if full is not None and not full.empty:
        parts += [
            f"The conditions the full data's rows compare, refitted on the first {full.rep.nunique()} masks of "
            f"`{full.dataset.iloc[0]}` (15% MCAR) the same way, at the run's training and with the steps doubled, the "
            "reference's too "
            f"({made_by(part_facts(facts, 'full_data_fits'))}): every full-data fit of the run stopped with its loss "
            "still falling, so a row there keeps its verdict only where doubling does not move it (the row says so).",
            "",
            *markdown_table(summary(full)),
            "",
            f"- {doubling_finding(full)}",
            "",
        ]
    return "\n".join(parts)
