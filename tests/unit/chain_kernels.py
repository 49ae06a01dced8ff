"""Picklable toy kernels for the chain-process tests (``test_chain_processes.py``).

Worker processes unpickle a kernel's functions by module and name, so these live in a plain
module (not a test file, which pytest imports under a name no other process can import)."""

from typing import NamedTuple

import jax
import jax.numpy as jnp


class Blowing(NamedTuple):
    sweep: jax.Array
    x: jax.Array
    blow: jax.Array  # 1.0: x turns NaN from sweep 130 on


def blowing_init(key):
    """About half of the chains (by their key) blow up."""
    k_x, k_b = jax.random.split(key)
    return Blowing(
        jnp.zeros((), jnp.int32), jax.random.normal(k_x, ()), (jax.random.uniform(k_b, ()) < 0.5).astype(jnp.float32)
    )


def blowing_step(key, state):
    sweep = state.sweep + 1
    bad = (sweep >= 130) & (state.blow > 0)
    return Blowing(sweep, jnp.where(bad, jnp.nan, state.x + jax.random.normal(key, ())), state.blow)


def record_x(state):
    return {"x": state.x}


def failing_step(key, state):
    raise ValueError("this step cannot be traced")


def data_init(key, data):
    """A chain of a replication whose data say whether it blows up (``data["blow"]``, 1.0 or 0.0)."""
    return Blowing(jnp.zeros((), jnp.int32), jax.random.normal(key, ()), data["blow"])


def data_step(key, state, data):
    return blowing_step(key, state)
