"""The data of one gibbs_2pno condition: simulated 2PNO responses with their truth, or a prepared
real binary data set (no truth); the design's missingness on top. And the heights of the
mixture example."""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.data.missingness import inject
from bayesirt.data.simulate_binary import simulate_binary, truth_table
from bayesirt.io import ResponseMatrix
from bayesirt.models.twopno import check_binary_responses
from bayesirt.studies.design_conditions import parse_missing
from bayesirt.studies.gibbs_2pno.settings import Mixture


def simulate_condition(design: dict, missing: str, seed: int, *, missing_seed: int):
    """2PNO data (``data.simulate_binary``, model ``2pno``; seed 001's recovery design draws
    a_j ~ U(discrimination_range), d_j ~ N(0, 1), theta_i ~ N(0, 1)) from ``seed``, shared by
    the replication's missingness conditions, then the condition's missingness from
    ``missing_seed``. ``design``: a validated design of the config. Returns (ResponseMatrix
    with -1 in hidden cells, truth table)."""
    low, high = design["discrimination_range"]
    rm, truth = simulate_binary(
        seed,
        int(design["n_persons"]),
        int(design["n_items"]),
        model="2pno",
        discrimination_range=(float(low), float(high)),
    )
    kind, rate = parse_missing(missing)
    rm.attrs["design_missing"] = missing
    if rate > 0:
        rm = inject(rm, kind, rate, seed=missing_seed)[0]
    return rm, truth


def observed_condition(responses, missing: str, *, missing_seed: int, where: str):
    """A real binary data set as one condition of a ``dataset`` design: the responses checked
    as binary (0, 1, -1 for missing; ``models.twopno.check_binary_responses`` names the first
    offending item and person), the condition's extra missingness injected on top of the
    natural one, and an empty truth table (real data have no true values). Persons with no
    observed response are kept: their ability draws come from the prior (the check warns with
    their count). Returns (ResponseMatrix, truth)."""
    y = check_binary_responses(responses.responses, [it.name for it in responses.items], where=where)
    rm = ResponseMatrix(
        y.astype(np.int16),
        list(responses.items),
        {**responses.attrs, "design_missing": missing, "natural_missing_rate": float(np.mean(y == -1))},
    )
    kind, rate = parse_missing(missing)
    if rate > 0:
        rm = inject(rm, kind, rate, seed=missing_seed)[0]
    return rm, truth_table([], [], [])


def simulate_mixture(mixture: Mixture, seed: int) -> pd.DataFrame:
    """Heights-like data of seed 001's example: ``n_women`` draws from N(mean_women, sd^2) and
    ``n_men`` from N(mean_men, sd^2) (one known sd), shuffled; the group is kept for checking
    only (the sampler never sees it)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
    n0, n1, sd = int(mixture.n_women), int(mixture.n_men), float(mixture.sd)
    x = np.concatenate([rng.normal(mixture.mean_women, sd, n0), rng.normal(mixture.mean_men, sd, n1)])
    group = np.repeat([0, 1], [n0, n1])
    order = rng.permutation(n0 + n1)
    return pd.DataFrame({"height": x[order], "group": group[order]})
