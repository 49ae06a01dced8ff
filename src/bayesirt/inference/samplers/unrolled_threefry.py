"""JAX's Threefry-2x32 random numbers with the hash unrolled, for cheap sweeps on the CPU.

Why. JAX lowers its Threefry hash for the CPU as a loop of five iterations (it compiles
faster than the unrolled 20 rounds). In XLA's CPU runtime every iteration of that loop is a
few separately launched kernels, and every key split, fold-in and draw of a Gibbs sweep is one
such loop: at 500 persons x 20 items most of a sweep's time went to these launches, not to
arithmetic. Written out with ``jax.numpy`` the 20 rounds are plain elementwise operations,
which XLA fuses into the kernel that uses the bits.

What. :data:`UNROLLED_THREEFRY` is a PRNG implementation (``jax.extend.random``) whose seed,
split, fold-in and random bits are those of JAX's default ``threefry2x32`` (with
``jax_threefry_partitionable`` on, JAX's default; with it off, JAX's own functions are used), so
``jax.random.normal(as_unrolled(key), ...)`` gives the same numbers as
``jax.random.normal(key, ...)``, bit for bit (the unit tests compare them).
:func:`hash_2x32` is the hash itself, for callers that build counters themselves.

One exception: ``jax.random.gamma`` draws element by element in a sequential loop for any key
implementation but JAX's own, so gamma draws should use a key of JAX's implementation
(:func:`as_threefry`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import define_prng_impl, threefry_prng_impl

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
_PARITY = np.uint32(0x1BD11BDA)  # Threefry's key-schedule constant


def _rotate_left(x, r: int):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def hash_2x32(k1, k2, x1, x2):
    """The Threefry-2x32 hash (20 rounds) of the counter pairs (x1, x2) under the key (k1, k2).

    Every argument is uint32 and they broadcast together; returns the two uint32 output words.
    The same function as ``jax.extend.random.threefry2x32_p``, written as elementwise
    ``jax.numpy`` operations so that XLA fuses it (see the module docstring).

    Parameters
    ----------
    k1, k2 : array of uint32
        The key's two words.
    x1, x2 : array of uint32
        The counters' two words.

    Returns
    -------
    tuple of jax.Array
        The two hashed words (uint32).
    """
    ks = (k1, k2, k1 ^ k2 ^ _PARITY)
    x = [x1 + ks[0], x2 + ks[1]]
    for block in range(5):
        for r in _ROTATIONS[block % 2]:
            x[0] = x[0] + x[1]
            x[1] = x[0] ^ _rotate_left(x[1], r)
        x[0] = x[0] + ks[(block + 1) % 3]
        x[1] = x[1] + ks[(block + 2) % 3] + np.uint32(block + 1)
    return x[0], x[1]


def _counters(shape):
    """High and low words of the counters 0..prod(shape)-1 laid out in ``shape`` (JAX's
    ``iota_2x32_shape``)."""
    size = int(np.prod(shape, dtype=np.int64))
    if size >= 2**32:
        raise NotImplementedError("more than 2^32 random words from one key")
    low = jnp.arange(size, dtype=jnp.uint32).reshape(shape)
    return jnp.zeros(shape, jnp.uint32), low


def _partitionable() -> bool:
    return bool(jax.config.jax_threefry_partitionable)


def _split(key, shape):
    if not _partitionable():
        return threefry_prng_impl.split(key, shape)
    high, low = _counters(tuple(shape))
    b1, b2 = hash_2x32(key[0], key[1], high, low)
    return jnp.stack([b1, b2], axis=-1)


def _fold_in(key, data):
    if not _partitionable():
        return threefry_prng_impl.fold_in(key, data)
    seed = threefry_prng_impl.seed(jnp.asarray(data, jnp.uint32))
    b1, b2 = hash_2x32(key[0], key[1], seed[0], seed[1])
    return jnp.stack([b1, b2])


def _random_bits(key, bit_width, shape):
    if not _partitionable():
        return threefry_prng_impl.random_bits(key, bit_width, shape)
    high, low = _counters(tuple(shape))
    b1, b2 = hash_2x32(key[0], key[1], high, low)
    if bit_width == 64:
        return (b1.astype(jnp.uint64) << np.uint64(32)) | b2.astype(jnp.uint64)
    bits = b1 ^ b2
    return bits if bit_width == 32 else bits.astype({8: jnp.uint8, 16: jnp.uint16}[bit_width])


UNROLLED_THREEFRY = define_prng_impl(
    key_shape=(2,),
    seed=threefry_prng_impl.seed,
    split=_split,
    random_bits=_random_bits,
    fold_in=_fold_in,
    name="threefry2x32_unrolled",
    tag="fry_unrolled",
)


def as_unrolled(key):
    """The same key (typed or raw Threefry key data) as a key of :data:`UNROLLED_THREEFRY`.

    Parameters
    ----------
    key : jax.Array
        A Threefry key, typed (``jax.random.key``) or raw (``uint32[..., 2]``).

    Returns
    -------
    jax.Array
        A typed key whose draws equal those of the Threefry key.
    """
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return jax.random.wrap_key_data(data, impl=UNROLLED_THREEFRY)


def as_threefry(key):
    """The same key as a key of JAX's own Threefry implementation (e.g. for ``jax.random.gamma``).

    Parameters
    ----------
    key : jax.Array
        A typed key of :data:`UNROLLED_THREEFRY` or of JAX's Threefry.

    Returns
    -------
    jax.Array
        A typed Threefry key with the same data.
    """
    return jax.random.wrap_key_data(jax.random.key_data(key), impl="threefry2x32")
