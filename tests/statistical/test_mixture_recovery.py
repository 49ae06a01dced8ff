"""Recovery by the mixture GRM (seed 000, 1.3) fitted with ADVI on data simulated from it.

The dimensions of a scale are exchangeable, so the fitted dimensions are matched to the true
ones by the permutation with the smallest discrimination error first.
"""

import itertools

import numpy as np
import pytest

from bayesirt.data import simulate
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.models import factorized_grm as fgrm
from bayesirt.studies import grm_advi


@pytest.mark.slow
def test_two_dimensional_mixture_recovers_discriminations_and_abilities():
    # seed 21: 3,000 persons, 10 items with 5 categories, D = 2; measured (fit seed 1):
    # discrimination correlation 0.91, RMSE 0.54 (true alphas log-normal, median 1.5);
    # ability correlations 0.78 and 0.64. Tolerances: 0.8, 0.8, and 0.5 for abilities.
    rm, truth = simulate.simulate_mixture_grm(21, 3000, [10], 5, n_dimensions=2)
    out = grm_advi.fit(
        rm,
        seed=1,
        settings=TrainSettings(progress_every=0),
        priors=fgrm.Priors(),
        truth=truth,
        posterior_draws=100,
        n_dimensions=2,
    )
    assert out.record["converged"]
    e = out.estimates
    disc = e[e.parameter == "discrimination"]
    est = disc.pivot(index="item", columns="dimension", values="mean").to_numpy()
    true = disc.pivot(index="item", columns="dimension", values="true").to_numpy()
    perm = min(itertools.permutations(range(2)), key=lambda p: np.mean((est[:, list(p)] - true) ** 2))
    est = est[:, list(perm)]
    assert np.corrcoef(est.ravel(), true.ravel())[0, 1] > 0.8
    assert np.sqrt(np.mean((est - true) ** 2)) < 0.8
    ab = e[e.parameter == "ability"]
    theta = ab.pivot(index="person", columns="dimension", values="mean").to_numpy()[:, list(perm)]
    theta_true = ab.pivot(index="person", columns="dimension", values="true").to_numpy()
    for d in range(2):
        assert np.corrcoef(theta[:, d], theta_true[:, d])[0, 1] > 0.5
