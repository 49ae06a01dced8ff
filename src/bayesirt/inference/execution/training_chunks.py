"""The training driver's compiled chunk of steps and its minibatches (``training``, ``bulk``).

A chunk of ``check_every`` optimizer steps runs inside one ``lax.scan``, called from a thin
Python loop (the driver's): far fewer dispatches than a Python loop of jitted steps. Each step
takes a minibatch of persons drawn without replacement within its epoch: step t uses slice
(t mod batches per epoch) of the permutation of epoch t // batches per epoch, whatever the chunk
boundaries. The permutations are drawn outside the chunk, once per epoch
(``EpochPermutations``), and handed to it; a data entry ``data[SHARED]`` (any pytree of arrays)
is not indexed by persons and goes to every batch whole.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax

SHARED = "shared"  # key of the data entry that is passed to every batch unsliced


def _epochs_per_chunk(n_persons: int, batch_size: int, n_steps: int) -> int:
    """How many epochs' permutations a chunk of ``n_steps`` steps can touch."""
    return -(-n_steps // max(n_persons // batch_size, 1)) + 1


def chunk_fn(loss_fn, optimizer, n_persons: int, batch_size: int, n_steps: int, track: bool = False):
    """Compile-ready function running ``n_steps`` optimizer steps inside one lax.scan.

    Its ``perms`` argument holds the permutations of persons of the epochs the chunk touches
    (``_epochs_per_chunk`` of them, from ``epoch_permutation``, first ``first_step``'s epoch);
    ignored for full-batch fits. They are computed outside the chunk, once per epoch: drawing
    them inside would sort all N persons in every chunk, a cost that grows faster than N and
    dominates the step time at a million persons.

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(params, key, batch) -> scalar`` to minimise.
    optimizer : optax.GradientTransformation
        The optimiser.
    n_persons : int
        N.
    batch_size : int
        Persons per step; ``batch_size >= n_persons`` is a full-batch fit.
    n_steps : int
        Steps per chunk.
    track : bool
        Whether to sum the gradients, squared gradients and iterates over the chunk (the noise
        rule's gradient drift and tail averaging).

    Returns
    -------
    callable
        ``chunk(params, opt_state, step_key, perms, data, first_step)`` returning the parameters,
        the optimiser state, the chunk's losses (n_steps,) and the sums (three pytrees shaped as
        ``params``, or ``()`` without ``track``).
    """
    full_batch = batch_size >= n_persons
    batches_per_epoch = max(n_persons // batch_size, 1)

    def step(carry, xs):
        params, opt_state, sums = carry
        key, index = xs
        loss, grads = jax.value_and_grad(loss_fn)(params, key, index)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        if track:  # sums of gradients, squared gradients and iterates (see ``gradient_drift``)
            sums = (
                jax.tree.map(jnp.add, sums[0], grads),
                jax.tree.map(lambda a, g: a + g * g, sums[1], grads),
                jax.tree.map(jnp.add, sums[2], params),
            )
        return (params, opt_state, sums), loss

    def chunk(params, opt_state, step_key, perms, data, first_step):
        t = first_step + jnp.arange(n_steps)
        step_keys = jax.vmap(lambda s: jax.random.fold_in(step_key, s))(t)
        if full_batch:
            index = jnp.broadcast_to(jnp.arange(n_persons), (n_steps, n_persons))
        else:
            # Step t uses slice (t mod batches_per_epoch) of the permutation of epoch
            # t // batches_per_epoch: persons are drawn without replacement within an epoch,
            # whatever the chunk boundaries.
            epoch, pos = t // batches_per_epoch, t % batches_per_epoch
            index = jax.vmap(lambda e, s: jax.lax.dynamic_slice(perms[e], (s * batch_size,), (batch_size,)))(
                epoch - epoch[0], pos
            )

        def step_with_data(carry, xs):
            key, idx, s = xs
            batch = (
                data
                if full_batch
                else {k: v if k == SHARED else jax.tree.map(lambda a: a[idx], v) for k, v in data.items()}
            )
            batch = dict(batch, index=idx, step=s)
            return step(carry, (key, batch))

        sums = tuple(jax.tree.map(jnp.zeros_like, params) for _ in range(3)) if track else ()
        (params, opt_state, sums), losses = jax.lax.scan(
            step_with_data, (params, opt_state, sums), (step_keys, index, t)
        )
        return params, opt_state, losses, sums

    return chunk


class EpochPermutations:
    """The permutation of persons for each epoch, drawn once per epoch from ``perm_key`` and
    the epoch number (so any chunk boundaries give the same minibatches), kept on the device
    while chunks still need it. With ``n_fits``, ``perm_key`` holds one key per fit of a block
    and each chunk gets the fits' permutations stacked, (n_fits, epochs, N): the same ones each
    fit would draw alone."""

    def __init__(self, perm_key, n_persons: int, batch_size: int, n_steps: int, n_fits: int | None = None):
        self.full_batch = batch_size >= n_persons
        self.batches_per_epoch = max(n_persons // batch_size, 1)
        self.count = _epochs_per_chunk(n_persons, batch_size, n_steps)
        self.key = perm_key

        def draw(key, e):
            return jax.random.permutation(jax.random.fold_in(key, e), n_persons)

        self.draw = jax.jit(draw if n_fits is None else jax.vmap(draw, in_axes=(0, None)))
        self.axis = 0 if n_fits is None else 1
        self.cache: dict[int, jax.Array] = {}
        lead = () if n_fits is None else (n_fits,)
        self.first, self.stacked = None, jnp.zeros((*lead, self.count, 1), jnp.int32)

    def for_chunk(self, first_step: int) -> jax.Array:
        first = first_step // self.batches_per_epoch
        if self.full_batch or first == self.first:
            return self.stacked
        wanted = range(first, first + self.count)
        self.cache = {e: self.cache[e] if e in self.cache else self.draw(self.key, e) for e in wanted}
        self.first, self.stacked = first, jnp.stack([self.cache[e] for e in wanted], axis=self.axis)
        return self.stacked
