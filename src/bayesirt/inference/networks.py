"""Small multilayer perceptrons as plain JAX pytrees, and the encoders' input layout.

A network is a list of layers ``{"w": (fan_in, fan_out), "b": (fan_out,)}``; hidden layers
use GELU (x * Phi(x), the paper's eq. 16, exact erf form by default) and the output layer is
the identity. Initialisation follows the paper (eq. 17): Kaiming-uniform
U(-sqrt(3 / fan_in), sqrt(3 / fan_in)) for weights and biases of the encoder and
discriminator. Plain pytrees (rather than flax modules) keep the parameters an ordinary dict
that ``optax.multi_transform`` can label and the training driver can carry through
``lax.scan``; there is nothing here a library would do for us beyond ``jax.nn``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT2PI = 1.0 / math.sqrt(2.0 * math.pi)


def init_mlp(key, sizes, scale_last: float = 1.0) -> list[dict]:
    """Kaiming-uniform MLP with layer widths ``sizes`` (input, hidden..., output).

    ``scale_last`` multiplies the last layer's initial weights and bias (e.g. a small value
    makes a residual branch start near zero)."""
    layers = []
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (k, fan_in, fan_out) in enumerate(zip(keys, sizes[:-1], sizes[1:])):
        kw, kb = jax.random.split(k)
        bound = jnp.sqrt(3.0 / fan_in)
        s = scale_last if i == len(sizes) - 2 else 1.0
        layers.append({"w": s * jax.random.uniform(kw, (fan_in, fan_out), minval=-bound, maxval=bound),
                       "b": s * jax.random.uniform(kb, (fan_out,), minval=-bound, maxval=bound)})
    return layers


def gelu(x, approximate: bool = False):
    if approximate:
        return jax.nn.gelu(x, approximate=True)
    return _gelu_exact(x)


# The exact GELU, x Phi(x) (values identical to ``jax.nn.gelu(approximate=False)``), with a
# hand-written derivative Phi(x) + x phi(x) evaluated in the backward pass from the saved
# input. Reverse mode through ``jax.nn.gelu`` lowered on CPU to a backward pass several times
# the cost of the forward, and an elementwise function returning both the value and the
# derivative (one fusion with two outputs) was as slow; one single-output fusion in each
# direction is what XLA CPU does fast. The derivative uses the cheaper erf form of Phi
# (absolute error ~1e-7 in the far negative tail, where the derivative is ~0).
@jax.custom_vjp
def _gelu_exact(x):
    return x * (0.5 * jax.lax.erfc(-x * _INV_SQRT2))


def _gelu_exact_fwd(x):
    return _gelu_exact(x), x


def _gelu_exact_bwd(x, g):
    return (g * gelu_derivative(x),)


_gelu_exact.defvjp(_gelu_exact_fwd, _gelu_exact_bwd)


def gelu_derivative(x, approximate: bool = False):
    """d GELU(x) / dx, elementwise (for hand-written backward passes)."""
    if approximate:
        return jax.jvp(lambda v: jax.nn.gelu(v, approximate=True), (x,), (jnp.ones_like(x),))[1]
    return 0.5 + 0.5 * jax.lax.erf(x * _INV_SQRT2) + x * _INV_SQRT2PI * jnp.exp(-0.5 * x * x)


def apply_mlp(layers, x, approximate_gelu: bool = False):
    """Forward pass; hidden layers GELU, output identity. ``x``: (..., fan_in)."""
    for layer in layers[:-1]:
        x = gelu(x @ layer["w"] + layer["b"], approximate_gelu)
    last = layers[-1]
    return x @ last["w"] + last["b"]


def response_features(y, n_categories_max: int):
    """Encoder input for responses ``y`` (B, I), missing coded -1: the one-hot code of each
    response over ``n_categories_max`` categories (all zeros for a missing cell) followed by
    the observation mask, so a missing answer is never confused with an answer.
    Returns (B, I * Kmax + I) float32."""
    observed = (y >= 0)
    onehot = jax.nn.one_hot(jnp.where(observed, y, 0), n_categories_max, dtype=jnp.float32)
    onehot = onehot * observed[..., None]
    flat = onehot.reshape(y.shape[:-1] + (-1,))
    return jnp.concatenate([flat, observed.astype(jnp.float32)], axis=-1)


def n_features(n_items: int, n_categories_max: int) -> int:
    return n_items * n_categories_max + n_items
