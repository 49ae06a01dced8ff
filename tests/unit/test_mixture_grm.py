"""Mixture GRM (seed 000, 1.3): against a brute-force numpy version, its D = 1 special case,
finite differences, and the frequencies of its own simulated responses."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads
from scipy.special import expit

from bayesirt import records
from bayesirt.data import simulate
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import mixture_grm as mix
from bayesirt.studies import grm_advi


@pytest.fixture(scope="module")
def small():
    return simulate.simulate_mixture_grm(11, 40, [3, 2], 4, n_dimensions=3, scale_names=["A", "B"])


def params_of(rm, truth, n_dimensions):
    def get(name):
        rows = truth[truth.parameter == name]
        return rows.sort_values([c for c in ("dimension", "item", "person", "scale", "category") if c in rows])[
            "value"
        ].to_numpy()

    d = n_dimensions
    return {
        "discrimination": jnp.array(get("discrimination").reshape(d, rm.n_items).T),
        "base_difficulty": jnp.array(get("base_difficulty")),
        "increments": jnp.array(get("increments").reshape(rm.n_items, -1)),
        "ability": jnp.array(np.moveaxis(get("ability").reshape(d, rm.n_persons, -1), 0, -1)),
    }


def brute_force(p, y, scale_index):
    alpha, theta = np.asarray(p["discrimination"]), np.asarray(p["ability"])
    tau = p["base_difficulty"][:, None] + np.concatenate(
        [np.zeros((alpha.shape[0], 1)), np.cumsum(p["increments"], 1)], 1
    )
    out = np.zeros(y.shape[0])
    for n in range(y.shape[0]):
        for i in range(y.shape[1]):
            if y[n, i] < 0:
                continue
            prob = 0.0
            for d in range(alpha.shape[1]):
                cum = np.concatenate([[1], expit(alpha[i, d] * (theta[n, scale_index[i], d] - tau[i])), [0]])
                prob += alpha[i, d] / alpha[i].sum() * (cum[y[n, i]] - cum[y[n, i] + 1])
            out[n] += np.log(prob)
    return out


def test_log_likelihood_matches_brute_force(small, x64):
    rm, truth = small
    p = params_of(rm, truth, 3)
    st = mix.structure_of(rm, 3)
    y = np.array(rm.responses)
    y[0, 1] = y[5, 4] = -1
    np.testing.assert_allclose(mix.log_likelihood(p, jnp.array(y), st), brute_force(p, y, rm.scale_index), rtol=1e-10)


def test_one_dimension_is_the_factorized_grm(x64):
    rm, truth = simulate.simulate_factorized_grm(3, 30, [3, 2], 5, ["A", "B"])
    get = lambda name: truth[truth.parameter == name]["value"].to_numpy()
    p1 = {
        "discrimination": jnp.array(get("discrimination")),
        "base_difficulty": jnp.array(get("base_difficulty")),
        "increments": jnp.array(get("increments").reshape(rm.n_items, -1)),
        "ability": jnp.array(get("ability").reshape(rm.n_persons, -1)),
    }
    pd_ = {**p1, "discrimination": p1["discrimination"][:, None], "ability": p1["ability"][:, :, None]}
    y = jnp.array(rm.responses)
    np.testing.assert_allclose(
        mix.log_likelihood(pd_, y, mix.structure_of(rm, 1)),
        fgrm.log_likelihood(p1, y, fgrm.structure_of(rm)),
        rtol=1e-12,
    )


def test_category_probs_sum_to_one_and_match_log_probs(x64):
    # items with 3 and 5 categories, so categories an item does not have are covered
    from bayesirt.io import Item, ResponseMatrix

    rng = np.random.default_rng(0)
    items = [Item("a", 3, "A"), Item("b", 5, "A"), Item("c", 5, "B")]
    rm = ResponseMatrix(np.column_stack([rng.integers(0, 3, 20), rng.integers(0, 5, (20, 2))]), items)
    st = mix.structure_of(rm, 2)
    p = mix.draw_parameters(rng, 20, [2, 1], 5, 2)
    p["increments"][0, 1:] = 0.7  # unused by item a
    p = {k: jnp.asarray(v) for k, v in p.items()}
    persons, items_ = np.meshgrid(np.arange(20), np.arange(3), indexing="ij")
    probs = np.asarray(mix.category_probs(p, persons.ravel(), items_.ravel(), st))
    np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-12)
    assert np.all(probs[items_.ravel() == 0][:, 3:] == 0)
    dense = np.exp(np.asarray(mix.category_log_probs(p, st))).reshape(-1, 5)
    np.testing.assert_allclose(probs, dense, rtol=1e-9, atol=1e-14)
    # gradients (grm.category_probs' hand-written backward pass, vmapped over dimensions)
    # match finite differences
    q = jnp.asarray(np.random.default_rng(1).dirichlet(np.ones(5), 60)) * (dense > 0)
    mixed = lambda prm: jnp.log((q * mix.category_probs(prm, persons.ravel(), items_.ravel(), st)).sum(-1)).sum()
    check_grads(mixed, (p,), order=1, modes=["rev"], atol=1e-6, rtol=1e-6)
    # and the likelihood of the observed responses is the log of those probabilities
    y = rm.responses.ravel()
    np.testing.assert_allclose(
        np.asarray(mix.log_likelihood(p, jnp.asarray(rm.responses), st)),
        np.log(probs[np.arange(y.size), y]).reshape(20, 3).sum(1),
        rtol=1e-10,
    )


def test_gradients_match_finite_differences(small, x64):
    rm, truth = small
    p = params_of(rm, truth, 3)
    st = mix.structure_of(rm, 3)
    y = jnp.array(rm.responses)
    check_grads(lambda q: mix.log_likelihood(q, y, st).sum(), (p,), order=1, modes=["rev"], atol=1e-6, rtol=1e-6)


def test_simulated_frequencies_match_the_model():
    # seed 4: 20,000 persons, 1 item with 4 categories; each category's observed frequency
    # within 4 binomial standard errors of the model's average probability.
    rm, truth = simulate.simulate_mixture_grm(4, 20000, [1], 4, n_dimensions=2)
    p = params_of(rm, truth, 2)
    st = mix.structure_of(rm, 2)
    probs = np.exp(np.asarray(mix.category_log_probs(p, st)))[:, 0]  # (N, K)
    expected = probs.mean(0)
    observed = np.bincount(rm.responses[:, 0], minlength=4) / rm.n_persons
    se = np.sqrt(expected * (1 - expected) / rm.n_persons)
    assert np.all(np.abs(observed - expected) < 4 * se), (observed, expected)


def test_mixture_fit_writes_dimension_tables(tmp_path):
    rm, truth = simulate.simulate_mixture_grm(5, 300, [4, 3], 4, n_dimensions=2)
    out = grm_advi.fit(
        rm,
        seed=1,
        settings=TrainSettings(max_steps=200, progress_every=0),
        priors=fgrm.Priors(),
        truth=truth,
        posterior_draws=20,
        n_dimensions=2,
    )
    est = out.estimates
    assert out.record["model"] == "mixture_grm" and out.record["n_dimensions"] == 2
    assert set(est[est.parameter == "discrimination"].dimension) == {0, 1}
    assert set(est[est.parameter == "increments"].dimension) == {-1}
    assert len(est) == len(truth) and est["true"].notna().all()
    assert len(est[est.parameter == "ability"]) == 300 * 2 * 2
    records.write_fit(out, tmp_path)
    assert (tmp_path / "fit.json").exists()


def test_every_objective_runs_with_the_mixture_model():
    # the mixture plugs into the imputation objectives through their cell-probability hook:
    # with one-hot imputation PMFs at the hidden responses every objective's likelihood is
    # the complete-data likelihood of the mixture, exactly (M copies all equal)
    from bayesirt.inference.variational import objectives
    from bayesirt.studies.rb_imputation import methods

    rm, truth = simulate.simulate_mixture_grm(6, 50, [3, 2], 4, n_dimensions=2)
    st = mix.structure_of(rm, 2)
    p = params_of(rm, truth, 2)
    y = np.array(rm.responses)
    hidden = np.random.default_rng(0).random(y.shape) < 0.2
    y_missing = np.where(hidden, -1, y)
    persons, items = np.nonzero(hidden)
    data = objectives.imputation_data(y_missing, persons, items, np.eye(4)[y[persons, items]], rm.n_categories)
    batch = {"y": jnp.asarray(y_missing), "index": jnp.arange(rm.n_persons), **data}
    complete = np.asarray(mix.log_likelihood(p, jnp.asarray(y), st))
    for name in objectives.NAMES:
        ll = methods.model_objective(name, st, 3)(p, batch, jax.random.key(0))
        if name == "zero_fill":
            np.testing.assert_allclose(ll, mix.log_likelihood(p, jnp.asarray(y_missing), st), rtol=1e-5)
        elif name in ("rao_blackwell_batch", "rao_blackwell_seed"):  # the same estimator
            np.testing.assert_allclose(np.sum(ll), complete.sum(), rtol=1e-5)
        else:
            np.testing.assert_allclose(ll, complete, rtol=1e-5, atol=1e-4)
