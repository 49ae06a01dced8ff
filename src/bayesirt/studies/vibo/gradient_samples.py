"""Does one sample per gradient suffice? A diagnostic of seed 004's "we find that estimating
[the gradients of VIBO] with a single sample is sufficient" (section VIBO).

Every VIBO fit of the run draws one sample per step, as the seed says, so the run alone cannot
tell what more samples would change. Here the seed's product (``vibo_seed``) is refitted on the
first data sets of design ``DESIGN`` (the run's data, masks and fit seeds, rebuilt as the
workflow builds them, and the design's next data sets where more are asked for than the run
has) under each missingness of ``MISSING``, once for each number of samples per gradient of
``SAMPLES``, all else as the run fits it (training, stopping rule, encoder; every sample size
starts from the same parameters). Each fit is scored as the study scores it: held-out
log-likelihood of the new persons, ability and discrimination RMSE, 90% coverage of the
abilities.

The page's row (``claims``) judges the seed's claim by the held-out log-likelihood per new person
(the marginal probability of observed data the seed says VIBO maximizes): one sample's minus the
most samples', per data set, should not fall below ``-MARGIN``. The margin is this project's: the
spread of that figure between the VIBO variants, mean-field VI, MML-EAP and NUTS on the run's
complete n1k data (0.001 to 0.02 nats per person).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from bayesirt.evaluation import verdicts
from bayesirt.studies.reproduction_claims import Claim, clean, from_verdict, page_sentence, rests_on, seed_source
from bayesirt.studies.vibo.conditions import STUDY, Condition
from bayesirt.studies.vibo.data import data_set

DESIGN = "n1k"
METHOD = "vibo_seed"
SAMPLES = (1, 5, 25)  # the seed's one, and more
MISSING = ("mcar0", "mcar20")
MARGIN = 0.01  # nats per new person (this project's; see the module docstring)
FIGURES = ("heldout_loglik", "ability_rmse", "discrimination_rmse", "coverage_90")
COLUMNS = ["design", "missing", "n_samples", "rep", "converged", "steps", *FIGURES, "seconds"]
SOURCE = seed_source("VIBO", "with a single sample is sufficient")
TABLE = "gradient_samples"  # the diagnostics' table of ``sample_fits``


def sample_fits(config: dict, n_data_sets: int, progress=print, design: str = DESIGN) -> pd.DataFrame:
    """``METHOD`` at each of ``SAMPLES`` samples per gradient on the first ``n_data_sets`` data
    sets of ``design`` (at most its ``block_size``; those past the run's replications are the
    design's next ones, built the same way) under each missingness of ``MISSING`` the design has:
    a row per fit, its data sets fitted as one block per sample size (``seconds``: the block's
    time over its fits)."""
    from bayesirt.studies.vibo import methods
    from bayesirt.studies.vibo.settings import Settings

    settings, spec = Settings.from_config(config), config["studies"][STUDY]["designs"][design]
    n = min(n_data_sets, spec["block_size"])
    rows = []
    for missing in [m for m in MISSING if m in spec["missing"]]:
        reps = []
        for rep in range(n):
            train, hidden, holdout, truth, seed = data_set(config, design, missing, rep)
            reps.append(
                methods.Replication(train, hidden, holdout, truth, Condition(design, missing, METHOD, rep), seed)
            )
        for samples in SAMPLES:
            t0 = time.perf_counter()
            outs = methods.fit_block(reps, settings, n_samples=samples)
            seconds = round((time.perf_counter() - t0) / n, 1)
            for rep, out in enumerate(outs):
                ev = out.record["evaluation"]
                rows.append(
                    {
                        "design": design,
                        "missing": missing,
                        "n_samples": samples,
                        "rep": rep,
                        "converged": bool(out.record["converged"]),
                        "steps": int(out.record["steps"]),
                        **{f: float(ev.get(f, np.nan)) for f in FIGURES},
                        "seconds": seconds,
                    }
                )
            progress(
                f"{missing} {samples} sample(s): held-out log-likelihood "
                f"{np.mean([o.record['evaluation']['heldout_loglik'] for o in outs]):.3f}, {seconds:.0f} s a fit"
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def one_against_most(fits: pd.DataFrame, figure: str = "heldout_loglik") -> pd.DataFrame:
    """Per design, missingness and data set: ``figure`` at one sample minus at the most samples
    the table has (column ``difference``), with whether both fits met their stopping rule."""
    most = fits.n_samples.max()
    keys = ["design", "missing", "rep"]
    one = fits[fits.n_samples == 1].set_index(keys)
    many = fits[fits.n_samples == most].set_index(keys)
    both = one.merge(many, left_index=True, right_index=True, suffixes=("_one", "_most"))
    return pd.DataFrame(
        {
            "difference": both[f"{figure}_one"] - both[f"{figure}_most"],
            "converged": both.converged_one & both.converged_most,
        }
    ).reset_index()


def claims(fits: pd.DataFrame | None) -> list[Claim]:
    """The seed's claim, a row per missingness of the diagnostic's table (none without it)."""
    if fits is None or fits.empty or 1 not in set(fits.n_samples) or fits.n_samples.nunique() < 2:
        return []
    most, rows = int(fits.n_samples.max()), []
    for (design, missing), d in one_against_most(fits).groupby(["design", "missing"], sort=False):
        subject = f"the held-out log-likelihood per new person at one sample minus at {most}"
        v = verdicts.paired_verdict(d.difference, direction="higher", margin=MARGIN, subject=subject)
        claim = Claim(
            f"One sample per gradient is sufficient: {most} samples do not raise the held-out log-likelihood by "
            f"more than {MARGIN} per new person (`{METHOD}`, design `{design}`, {missing}; diagnostics)",
            f'"with a single sample is sufficient"; no number (the margin {MARGIN} is this project\'s)',
            f"{v.n} paired data sets; mean difference {v.mean_difference:.3g}",
            from_verdict(v),
            clean(page_sentence(v)),
            METHOD,
            **SOURCE,
        )
        rows.append(rests_on(claim, d))
    return rows


def summary(fits: pd.DataFrame) -> pd.DataFrame:
    """A row per missingness and sample size: the figures' means over the data sets."""
    rows = []
    for (missing, samples), f in fits.groupby(["missing", "n_samples"], sort=False):
        rows.append(
            {
                "condition": f"design `{f.design.iloc[0]}`, {missing}",
                "samples per gradient": int(samples),
                "data sets": len(f),
                "met their stopping rule": f"{int(f.converged.sum())} of {len(f)}",
                "steps (median)": f"{f.steps.median():.0f}",
                "held-out log-likelihood per new person": f"{f.heldout_loglik.mean():.3f}",
                "ability RMSE": f"{f.ability_rmse.mean():.4f}",
                "discrimination RMSE": f"{f.discrimination_rmse.mean():.4f}",
                "90% coverage": f"{f.coverage_90.mean():.3f}",
                "seconds a fit": f"{f.seconds.mean():.0f}",
            }
        )
    return pd.DataFrame(rows)


def section(fits: pd.DataFrame | None, made_by: str) -> list[str]:
    """The page's lines: what was fitted, the table, and the claim's verdict per missingness."""
    from bayesirt.studies.reproduction import markdown_table

    if fits is None or fits.empty:
        return []
    lines = [
        "## Diagnostics: one sample per gradient",
        "",
        f"`{METHOD}` refitted on the first {fits.rep.nunique()} data sets of design `{fits.design.iloc[0]}` (the "
        "run's data, masks and fit seeds, and the design's next data sets built the same way) with "
        f"{', '.join(str(s) for s in sorted(set(fits.n_samples)))} samples per gradient, all else as the run fits "
        f"it ({made_by}; `bayesirt.studies.vibo.gradient_samples`). The "
        "seconds are a block's, shared by its fits.",
        "",
        *markdown_table(summary(fits)),
        "",
    ]
    return lines + [f"- {c.claim}: **{c.verdict}**. {c.why[:1].upper()}{c.why[1:]}" for c in claims(fits)] + [""]
