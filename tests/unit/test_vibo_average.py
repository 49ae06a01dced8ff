"""VIBO's averaging ability encoder (seed 004's comparison): the average runs over the observed
responses only, the objective batches like VIBO's, gradients are finite and match finite
differences, and a short fit learns."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf

from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import vibo, vibo_average, vibo_encoder, vibo_items
from bayesirt.models import irt2pl
from tests.unit.test_vibo import small_data


def setup(model="2pl", j=8, categories=()):
    st = irt2pl.Structure(model, j, 1, tuple(categories))
    vs = vibo.VIBOSettings(missing="prior_per_missing", hidden=(8, 6))
    y = small_data(j=j, model=model, categories=4)
    params = vibo_average.init(jax.random.key(1), st, vs, y)
    return st, vs, y, params


def mlp_by_hand(layers, x):
    """The MLP in numpy: hidden layers GELU (exact erf form), output identity."""
    gelu = lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2)))
    for layer in layers[:-1]:
        x = gelu(x @ np.asarray(layer["w"], np.float64) + np.asarray(layer["b"], np.float64))
    return x @ np.asarray(layers[-1]["w"], np.float64) + np.asarray(layers[-1]["b"], np.float64)


def by_hand(encoder, items, row, st):
    """q(a | d, r) of one person, cell by cell in numpy: the mean of the observed cells'
    embeddings through the head (no table, no one-hot contraction)."""
    gelu = lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2)))
    feats = np.concatenate([np.asarray(items[n], np.float64).reshape(st.n_items, -1) for n in st.item_shapes()], 1)
    embeddings = [
        gelu(mlp_by_hand(encoder["embed"], np.concatenate([feats[j], np.eye(st.n_categories_max)[r]])))
        for j, r in enumerate(row)
        if r >= 0
    ]
    out = mlp_by_hand(encoder["head"], np.mean(embeddings, axis=0))
    prec = np.log1p(np.exp(out[1] + 1.0)) + vibo_encoder.MIN_PRECISION
    return out[0], 1 / np.sqrt(prec)


@pytest.mark.parametrize("model", ["2pl", "grm"])
def test_the_encoder_averages_the_observed_responses_embeddings(model):
    cats = (4,) * 8 if model == "grm" else ()
    st, _, y, params = setup(model, categories=cats)
    items = vibo_items.sample_items(jax.random.key(3), params["items"])
    mean, sd = vibo_average.average_encoder(params["encoder"], items, jnp.asarray(y), st)
    for i in (0, 1, 5, 17):  # person 0 answered two items only
        m, s = by_hand(params["encoder"], items, y[i], st)
        np.testing.assert_allclose([mean[i, 0], sd[i, 0]], [m, s], rtol=2e-5, atol=2e-6)
    # one answered item: the head of that item's embedding, however many cells are missing
    one = np.full((2, 8), -1, np.int8)
    one[0, 3], one[1, :] = 1, [-1, -1, -1, 1, -1, -1, -1, -1]
    m1, s1 = vibo_average.average_encoder(params["encoder"], items, jnp.asarray(one), st)
    np.testing.assert_allclose(m1[0], m1[1])
    np.testing.assert_allclose([m1[0, 0], s1[0, 0]], by_hand(params["encoder"], items, one[0], st), rtol=2e-5)


def test_minibatch_losses_average_to_the_full_batch_objective():
    st, vs, y, params = setup()
    params["items"]["log_scale"] = jax.tree.map(lambda v: v + 1.0, params["items"]["log_scale"])
    loss = jax.jit(vibo_average.loss_fn(st, vs, y.shape[0]))
    key = jax.random.key(2)
    full = loss(params, key, {"y": jnp.asarray(y), "index": jnp.arange(60)})
    perm = np.random.default_rng(3).permutation(60)
    parts = [loss(params, key, {"y": jnp.asarray(y[b]), "index": jnp.asarray(b)}) for b in perm.reshape(4, 15)]
    np.testing.assert_allclose(np.mean(parts), full, rtol=2e-6)


def test_gradients_are_finite_and_match_finite_differences():
    st, vs, y, params = setup()
    loss = vibo_average.loss_fn(st, vs, y.shape[0])
    batch = {"y": jnp.asarray(y), "index": jnp.arange(60)}
    key = jax.random.key(4)
    f = jax.jit(lambda p: loss(p, key, batch))  # fixed key: a deterministic function of the parameters
    grads = jax.jit(jax.grad(f))(params)
    leaves = jax.tree.leaves(grads)
    assert all(bool(jnp.isfinite(g).all()) for g in leaves)
    assert any(float(jnp.abs(g).max()) > 0 for g in jax.tree.leaves(grads["encoder"]["embed"]))
    # a random direction: the directional derivative against a central difference
    keys = iter(jax.random.split(jax.random.key(5), len(leaves)))
    direction = jax.tree.map(lambda v: jax.random.normal(next(keys), v.shape), params)
    eps = 1e-2
    shifted = lambda s: f(jax.tree.map(lambda p, d: p + s * eps * d, params, direction))  # one compiled f
    numeric = (shifted(1.0) - shifted(-1.0)) / (2 * eps)
    analytic = sum(jnp.vdot(g, d) for g, d in zip(leaves, jax.tree.leaves(direction), strict=True))
    np.testing.assert_allclose(float(analytic), float(numeric), rtol=2e-2)


def test_fit_lowers_the_loss_and_scores_new_persons():
    y = small_data(n=120, j=10, seed=4)
    st = irt2pl.Structure("2pl", 10, 1)
    train = TrainSettings(learning_rate=0.05, batch_size=40, max_steps=200, min_steps=200, progress_every=0)
    vs = vibo.VIBOSettings(hidden=(8,), train=train)
    result = vibo_average.fit(jax.random.key(0), y, st, vs)
    assert np.isfinite(result.losses).all() and result.losses[-50:].mean() < result.losses[:50].mean()
    lo, _ = vibo_average.encode(result.params, st, vs, jax.random.key(1), np.zeros((1, 10), np.int8))
    hi, _ = vibo_average.encode(result.params, st, vs, jax.random.key(1), np.ones((1, 10), np.int8))
    assert hi[0, 0] > lo[0, 0] + 1.0  # more correct answers, higher ability
    probs = vibo_average.predictive_probs(result.params, st, vs, jax.random.key(2), y, [0, 1], [3, 4], n_draws=20)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-5)
    ratios = vibo_average.log_ratios(result.params, st, replace(vs), jax.random.key(3), y, n_draws=8)
    assert ratios.shape == (8,) and np.isfinite(ratios).all()
