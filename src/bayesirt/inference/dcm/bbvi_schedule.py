"""The coordinate-ascent schedule of BBVI: one optimiser that cycles over the four parameter blocks.

The seed's coordinate ascent: sweeps over the four blocks Z, beta, pi, sigma^2 with
``steps_per_block`` gradient steps on each in turn (the seed: 10, 20, 20, 30). Each block has
its own Adam (optax), which moves only while its block is active (:func:`coordinate_ascent`);
the seed used plain gradient steps with hand-set step sizes.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

BLOCKS = ("z", "beta", "pi", "sigma2")
PARAM_BLOCK = {"rho": 0, "mu": 1, "chol_off": 1, "log_diag": 1, "log_d": 2, "log_ab": 3}


class CAState(NamedTuple):
    """State of ``coordinate_ascent``.

    Attributes
    ----------
    count : jax.Array
        Steps taken so far.
    inner : tuple
        The blocks' optimiser states.
    """

    count: jnp.ndarray
    inner: tuple


def _active_block(count, steps_per_block):
    period = sum(steps_per_block)
    bounds = jnp.cumsum(jnp.asarray(steps_per_block))
    return jnp.searchsorted(bounds, count % period, side="right")


def coordinate_ascent(transforms, steps_per_block) -> optax.GradientTransformation:
    """An optax transformation that cycles over the blocks of ``PARAM_BLOCK``.

    Block b is updated by ``transforms[b]`` for ``steps_per_block[b]`` steps, the others stand
    still (their optimiser state included, so Adam's moments and step counts are per block).

    Parameters
    ----------
    transforms : sequence of optax.GradientTransformation
        One per block.
    steps_per_block : tuple of int
        Steps per block in each cycle.

    Returns
    -------
    optax.GradientTransformation
        The cycling transformation.
    """

    def split(tree, b):
        return {k: v for k, v in tree.items() if PARAM_BLOCK[k] == b}

    def init(params):
        return CAState(jnp.zeros([], jnp.int32), tuple(tx.init(split(params, b)) for b, tx in enumerate(transforms)))

    def update(grads, state, params=None):
        active = _active_block(state.count, steps_per_block)
        updates, inner = {}, []
        for b, tx in enumerate(transforms):  # four blocks: a static unrolled loop
            u, s = tx.update(split(grads, b), state.inner[b], split(params, b))
            on = active == b
            inner.append(jax.tree.map(lambda new, old: jnp.where(on, new, old), s, state.inner[b]))  # noqa: B023  (tree.map calls it at once)
            updates.update(jax.tree.map(lambda x: jnp.where(on, x, jnp.zeros_like(x)), u))  # noqa: B023  (tree.map calls it at once)
        return updates, CAState(state.count + 1, tuple(inner))

    return optax.GradientTransformation(init, update)
