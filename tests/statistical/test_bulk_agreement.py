"""Fits in a block against the same fits one by one, to convergence: the held-out log-likelihood
and the loading error of each replication agree within Monte Carlo error.

Design (fixed seeds 0-7): 8 replications of a 2-factor confirmatory GRM (12 items, 3 categories,
400 persons, 100 held out), IWAE with R = 5, minibatches of 50, the relative stopping rule. Each
replication is fitted in one block of 8 and alone, from the same key. Both runs are the same
computation up to float32 rounding, which the optimisation may amplify (a stopping check may fire
one check apart), so the per-replication differences are compared with the spread between
replications: the mean paired difference must lie within 3 standard errors of zero, and no
replication may differ by more than a fifth of that spread.
"""

import jax
import numpy as np
import pytest

from bayesirt.data import simulate_mgrm as sm
from bayesirt.evaluation import loglik
from bayesirt.inference.execution import bulk
from bayesirt.inference.execution.training import TrainSettings, train_problem
from bayesirt.inference.variational import iwae
from bayesirt.models import mgrm

pytestmark = pytest.mark.slow

TRAIN = TrainSettings(
    learning_rate=0.01,
    batch_size=50,
    max_steps=3000,
    min_steps=500,
    check_every=100,
    window=300,
    rel_tol=1e-3,
    patience=2,
    progress_every=0,
)


def replication(seed: int):
    rm, truth = sm.simulate_mgrm(seed, 500, n_items=12, n_categories=3, n_factors=2)
    st = mgrm.structure(rm.n_categories, 2, sm.q_matrix(rm), positive_loadings=True)
    y = np.asarray(rm.responses)
    return y[:400], y[400:], st, truth


def summary(params, st, truth, y_hold):
    free = np.asarray(st.loading_mask) > 0
    lam = np.asarray(mgrm.loadings(params["model"], st))
    lam_true = np.asarray(mgrm.loadings(mgrm.truth_params(st, truth), st))
    ll = loglik.quadrature_loglik(params["model"], st, y_hold).mean()
    return float(ll), float(np.mean((lam - lam_true)[free] ** 2))


def test_block_and_single_fits_agree_within_monte_carlo_error():
    cfg = iwae.IWAESettings(n_importance=5, hidden=(32,), train=TRAIN)
    reps = [replication(seed) for seed in range(8)]
    problems = [iwae.problem(jax.random.key(100 + i), y, st, cfg) for i, (y, _, st, _) in enumerate(reps)]
    block = bulk.train_block(problems)
    single = [train_problem(p) for p in problems]
    # the fits stop on their own tests, at different steps, in the block as alone
    assert [b.steps for b in block] == [s.steps for s in single]
    assert len({s.steps for s in single}) > 1 and any(s.converged for s in single)
    got = np.array(
        [
            [summary(fit.params, st, truth, y_hold) for fit in (b, s)]
            for b, s, (_, y_hold, st, truth) in zip(block, single, reps, strict=True)
        ]
    )  # (replication, block | single, loglik | loading MSE)
    for k in range(2):
        diff = got[:, 0, k] - got[:, 1, k]
        spread = got[:, 1, k].std(ddof=1)
        se = diff.std(ddof=1) / np.sqrt(len(diff))
        assert abs(diff.mean()) <= 3 * se + 1e-6, (k, diff, se)
        assert np.abs(diff).max() <= 0.2 * spread, (k, diff, spread)
