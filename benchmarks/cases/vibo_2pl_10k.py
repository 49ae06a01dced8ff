"""VIBO, 2PL, 10,000 persons x 100 items, 20% MCAR missing: time to convergence, recovery against
MML-EAP, amortized scoring of 10,000 new persons.

Targets (issue 11): VIBO to convergence in <= 20 s on 2 CPU cores (compilation reported apart);
ability correlation with the truth within 0.01 of MML-EAP's (the reference at this size: NUTS
on 10,000 x 100 is too slow); scoring 10,000 new persons (encoder only, no refit) in <= 0.5 s.
Also: the refit alternative for the new persons (non-amortized VI with the items held at q(d)),
missing-response prediction on the hidden cells, and the held-out log-likelihood per new
person (one Laplace importance-sampling evaluator for every method's item estimates).
"""

import time

import jax
import numpy as np

from bayesirt.data.missingness import inject
from bayesirt.data.simulate_binary import simulate_binary
from bayesirt.evaluation import person_loglik
from bayesirt.evaluation.recovery import metrics
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.marginal import mml, mml_posterior
from bayesirt.inference.variational import mfvi, vibo, vibo_items
from bayesirt.models import irt2pl

N, J, RATE = 10_000, 100, 0.2
SETTINGS = TrainSettings(
    learning_rate=0.02,
    batch_size=500,
    max_steps=3000,
    min_steps=200,
    check_every=50,
    window=100,
    rel_tol=1e-4,
    patience=3,
    lr_decay_steps=1000,
    progress_every=0,
)

REFIT = TrainSettings(learning_rate=0.05, max_steps=2000, progress_every=0)
PREDICTIVE_DRAWS, HELDOUT_DRAWS = 100, 200
# benchmarks/run.py --smoke
SMOKE = {
    "N": 300,
    "J": 10,
    "PREDICTIVE_DRAWS": 10,
    "HELDOUT_DRAWS": 20,
    "SETTINGS": TrainSettings(
        learning_rate=0.02, batch_size=100, max_steps=100, min_steps=50, check_every=50, window=50, progress_every=0
    ),
    "REFIT": TrainSettings(learning_rate=0.05, max_steps=100, min_steps=50, progress_every=0),
}


def scores(probs, truth):
    p = np.clip(probs[np.arange(truth.size), truth], 1e-12, 1.0)
    return {"accuracy": float(np.mean(probs.argmax(1) == truth)), "log_score": float(np.mean(np.log(p)))}


def run() -> dict:
    rm, truth = simulate_binary(2024, 2 * N, J)
    injected, hidden = inject(rm, "mcar", RATE, seed=7)
    y_all, full = injected.responses, rm.responses
    pick = lambda p: truth[truth.parameter == p].value.to_numpy()
    a, d, theta = pick("discrimination"), pick("difficulty"), pick("ability")
    y, y_new = y_all[:N], y_all[N:]
    st = irt2pl.Structure("2pl", J, 1)
    vs = vibo.VIBOSettings(train=SETTINGS)

    fit = vibo.fit(jax.random.key(0), y, st, vs)
    mean, sd = vibo.encode(fit.params, st, vs, jax.random.key(1), y)
    vibo_ab = metrics(mean[:, 0], theta[:N])
    cov90 = float(np.mean(np.abs(mean[:, 0] - theta[:N]) < 1.6449 * sd[:, 0]))
    cov50 = float(np.mean(np.abs(mean[:, 0] - theta[:N]) < 0.6745 * sd[:, 0]))
    items = vibo_items.item_posterior(fit.params, st)

    ml = mml.fit(None, y, mml.Structure(2), mml.MMLSettings(n_nodes=41))
    # EAP on 61 nodes: with 100 items a posterior sd is ~0.25, finer than 21 nodes resolve
    eap, psd = (v[:, 0] for v in mml_posterior.posterior(y, ml.discrimination, ml.cuts, 2, n_nodes=61)[1:])
    mml_ab = metrics(eap, theta[:N])

    # amortized scoring of new persons: compile once, then time
    t0 = time.perf_counter()
    vibo.encode(fit.params, st, vs, jax.random.key(2), y_new[:10])
    score_compile = time.perf_counter() - t0
    t0 = time.perf_counter()
    new_mean, new_sd = vibo.encode(fit.params, st, vs, jax.random.key(2), y_new)
    score_seconds = time.perf_counter() - t0
    refit = mfvi.score_new(fit.params, st, mfvi.MFVISettings(), jax.random.key(3), y_new, REFIT)
    new_eap = mml_posterior.posterior(y_new, ml.discrimination, ml.cuts, 2, n_nodes=61)[1][:, 0]

    # missing-response prediction on the hidden cells of the training persons
    rows, cols = np.nonzero(hidden[:N])
    truth_cells = full[:N][rows, cols].astype(int)
    vibo_pred = scores(
        vibo.predictive_probs(fit.params, st, vs, jax.random.key(4), y, rows, cols, n_draws=PREDICTIVE_DRAWS),
        truth_cells,
    )
    mml_pred = scores(
        mml_posterior.predictive_probs(y, ml.discrimination, ml.cuts, rows, cols, 2, n_nodes=61), truth_cells
    )

    # held-out log-likelihood per new person, one evaluator for every set of item estimates
    def heldout(disc, diff):
        it = {
            "log_discrimination": np.log(np.asarray(disc, np.float32)).reshape(J, 1),
            "difficulty": np.asarray(diff, np.float32),
        }
        ll = lambda yb, t: irt2pl.log_likelihood(dict(it, ability=t), yb, st)
        return float(
            person_loglik.laplace_importance_loglik(jax.random.key(5), ll, y_new, 1, n_samples=HELDOUT_DRAWS).mean()
        )

    return {
        "sizes": {"persons": N, "items": J, "missing_rate": RATE, "new_persons": N},
        "reference": (
            "MML-EAP (inference.marginal.mml: L-BFGS on 41 Gauss-Hermite nodes; EAP on 61 nodes); "
            "NUTS not run at this size"
        ),
        "wall_seconds": fit.wall_seconds,
        "compile_seconds": fit.compile_seconds,
        "steps": fit.steps,
        "epochs": fit.steps * SETTINGS.batch_size / N,
        "converged": fit.converged,
        "vibo_ability_corr": vibo_ab["corr"],
        "mml_eap_ability_corr": mml_ab["corr"],
        "ability_corr_gap": mml_ab["corr"] - vibo_ab["corr"],
        "vibo_ability_rmse": vibo_ab["rmse"],
        "mml_eap_ability_rmse": mml_ab["rmse"],
        "vibo_coverage_50": cov50,
        "vibo_coverage_90": cov90,
        "mml_eap_coverage_90": float(np.mean(np.abs(eap - theta[:N]) < 1.6449 * psd)),
        "vibo_discrimination_rmse": metrics(items["discrimination"][0][:, 0], a)["rmse"],
        "mml_discrimination_rmse": metrics(ml.discrimination, a)["rmse"],
        "vibo_difficulty_rmse": metrics(items["difficulty"][0], d)["rmse"],
        "mml_difficulty_rmse": metrics(ml.cuts[:, 0], d)["rmse"],
        "mml_seconds": ml.wall_seconds,
        "score_new_seconds": score_seconds,
        "score_new_compile_seconds": score_compile,
        "score_new_ability_corr": metrics(new_mean[:, 0], theta[N:])["corr"],
        "refit_new_seconds": refit.wall_seconds,
        "refit_new_compile_seconds": refit.compile_seconds,
        "refit_new_ability_corr": metrics(np.asarray(refit.params["loc"])[:, 0], theta[N:])["corr"],
        "mml_eap_new_ability_corr": metrics(new_eap, theta[N:])["corr"],
        "vibo_hidden_accuracy": vibo_pred["accuracy"],
        "vibo_hidden_log_score": vibo_pred["log_score"],
        "mml_hidden_accuracy": mml_pred["accuracy"],
        "mml_hidden_log_score": mml_pred["log_score"],
        "heldout_loglik_per_person_vibo_items": heldout(
            *[items[k][0].reshape(-1) for k in ("discrimination", "difficulty")]
        ),
        "heldout_loglik_per_person_mml_items": heldout(ml.discrimination, ml.cuts[:, 0]),
        "heldout_loglik_per_person_true_items": heldout(a, d),
    }
