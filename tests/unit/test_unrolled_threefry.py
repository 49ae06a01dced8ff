"""The unrolled Threefry keys give JAX's own Threefry draws bit for bit, and the batched gamma
sampler of the Gibbs expansion draws from the gamma distribution."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.random import threefry_2x32
from scipy import stats

from bayesirt.inference.samplers import gibbs_expansion
from bayesirt.inference.samplers.truncnormal import uniform_open
from bayesirt.inference.samplers.unrolled_threefry import as_threefry, as_unrolled, hash_2x32

KEY = jax.random.key(20261128)


def _same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b))


def test_hash_matches_jax_threefry():
    data = jax.random.key_data(KEY)
    counts = jnp.arange(10, dtype=jnp.uint32)
    expected = threefry_2x32(data, counts)  # hashes the two halves of the counters as pairs
    words = hash_2x32(data[0], data[1], counts[:5], counts[5:])
    assert _same(jnp.concatenate(words), expected)


@pytest.mark.parametrize("jit", [False, True])
def test_keys_give_the_same_draws(jit):
    def draws(key):
        k1, k2 = jax.random.split(key)
        folded = jax.random.fold_in(k2, 12345)
        return (
            jax.random.key_data(jax.random.split(key, 7)),
            jax.random.normal(k1, (3, 5)),
            jax.random.uniform(folded, (1001,)),
            jax.random.exponential(k2, (4,)),
            jax.random.bits(folded, (9,), jnp.uint8),
        )

    fn = jax.jit(draws) if jit else draws
    for ours, theirs in zip(fn(as_unrolled(KEY)), fn(KEY), strict=True):
        assert _same(ours, theirs)


def test_vmapped_keys_and_round_trip():
    keys = jax.random.split(KEY, 3)
    ours = jax.jit(jax.vmap(lambda k: jax.random.normal(jax.random.fold_in(as_unrolled(k), 3), (6,))))(keys)
    theirs = jax.vmap(lambda k: jax.random.normal(jax.random.fold_in(k, 3), (6,)))(keys)
    assert _same(ours, theirs)
    assert _same(jax.random.key_data(as_threefry(as_unrolled(KEY))), jax.random.key_data(KEY))


@pytest.mark.parametrize("n", [6, 7])
def test_uniform_open_bits_unchanged(n):
    """uniform_open's floats are still those of the Threefry bits of the counters 0..n-1."""
    bits = threefry_2x32(jax.random.key_data(KEY), jnp.arange(n + n % 2, dtype=jnp.uint32))[:n]
    expected = (np.asarray(bits) >> 9).astype(np.float32) * np.float32(2.0**-23) + np.float32(2.0**-24)
    assert _same(uniform_open(KEY, (n,)), expected)


@pytest.mark.parametrize("candidates", [gibbs_expansion.GAMMA_CANDIDATES, 1])
@pytest.mark.parametrize("shape", [1.0, 2.5, 251.0])
def test_gamma_draws_follow_the_gamma_distribution(monkeypatch, candidates, shape):
    """One candidate per round sends many elements through the loop of later batches."""
    monkeypatch.setattr(gibbs_expansion, "GAMMA_CANDIDATES", candidates)
    x = np.asarray(gibbs_expansion.gamma_shape_above_one(as_unrolled(KEY), jnp.full((20_000,), shape, jnp.float32)))
    assert np.all(x > 0)
    assert stats.kstest(x, stats.gamma(shape).cdf).pvalue > 1e-3
    assert abs(x.mean() - shape) < 4 * np.sqrt(shape / x.size)
