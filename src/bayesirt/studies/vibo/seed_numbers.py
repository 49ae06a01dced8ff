"""The run's figure beside seed 004's one number (``docs/reproduction/data/vibo/seed_numbers.yaml``;
``bayesirt.studies.seed_numbers`` puts it on the page).

The seed reports no experiment; its one number is that a single sample per gradient suffices.
Beside it: what more samples change in the seed's product, from the diagnostics' refits at
several sample sizes (``vibo.gradient_samples``).
"""

from __future__ import annotations

from bayesirt.evaluation.verdicts import mean_interval
from bayesirt.studies.seed_numbers import Ours
from bayesirt.studies.vibo import gradient_samples

TABLE = f"diagnostics/{gradient_samples.TABLE}"


def gradient_samples_figure(tables: dict) -> Ours:
    fits = tables.get(TABLE)
    if fits is None or fits.empty or 1 not in set(fits.n_samples) or fits.n_samples.nunique() < 2:
        return Ours(
            None,
            "every VIBO fit of the run draws one sample per step (the seed's setting), and the diagnostics of "
            "vibo_seed at several sample sizes have not been run (python tools/reproduction.py diagnose vibo "
            "--parts gradient_samples)",
        )
    diff, most = gradient_samples.one_against_most(fits), int(fits.n_samples.max())
    parts = []
    for missing, d in diff.groupby("missing", sort=False):
        mean, low, high, n = mean_interval(d.difference)
        parts.append(f"{missing} {mean:+.4f} [{low:+.4f}, {high:+.4f}] ({n} data sets)")
    return Ours(
        f"held-out log-likelihood per new person, 1 sample minus {most}: " + "; ".join(parts),
        f"vibo_seed at 1 and {most} samples per gradient on the same data sets of design {fits.design.iloc[0]}, "
        "one sample's figure minus the most samples', with its 95% interval over data sets, per missingness "
        "(the diagnostics)",
    )


FIGURES = {"gradient_samples": gradient_samples_figure}
