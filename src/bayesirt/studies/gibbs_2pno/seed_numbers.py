"""The run's figures beside seed 001's numbers (``docs/reproduction/data/gibbs_2pno/seed_numbers.yaml``;
``bayesirt.studies.seed_numbers`` puts them on the page).

The blog note's only numbers are the sizes of its mixture example's two groups (300 women, 400
men). The run simulates heights of that make-up and samples the mixture's posterior
(``mixture/posterior.csv``): the sampler's mixing proportion, times the 700 persons, is what the
run says of the two groups' sizes.
"""

from __future__ import annotations

from bayesirt.studies.seed_numbers import Ours

PERSONS = 700  # the note's 300 women and 400 men


def mixture_groups(tables: dict) -> Ours:
    p = tables["posterior"]
    share = p[p.parameter == "pi"] if len(p) else p
    if share.empty:
        return Ours(None, "the committed run has no mixing proportion in mixture/posterior.csv")
    row = share.iloc[0]
    women, men = PERSONS * (1 - row["mean"]), PERSONS * row["mean"]
    low, high = PERSONS * row.q5, PERSONS * row.q95
    return Ours(
        f"{women:.0f}, {men:.0f} (90% posterior interval of the men: {low:.0f} to {high:.0f})",
        f"the Gibbs sampler's posterior mean of the second component's share π ({row['mean']:.3f}, true "
        f"{row.true:.3f}) times {PERSONS}; one simulated data set, so the interval is the posterior's, not over "
        "replications",
    )


FIGURES = {"mixture_groups": mixture_groups}
