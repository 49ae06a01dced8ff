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

import jax
import jax.numpy as jnp


def init_mlp(key, sizes, scale_last: float = 1.0) -> list[dict]:
    """Kaiming-uniform MLP with layer widths ``sizes`` (input, hidden..., output).

    ``scale_last`` multiplies the last layer's initial weights and bias (e.g. a small value
    makes a residual branch start near zero).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    sizes : sequence of int
        Layer widths, input first.
    scale_last : float
        Factor on the last layer's initial weights and bias.

    Returns
    -------
    list of dict
        One ``{"w", "b"}`` per layer.
    """
    layers = []
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (k, fan_in, fan_out) in enumerate(zip(keys, sizes[:-1], sizes[1:])):
        kw, kb = jax.random.split(k)
        bound = jnp.sqrt(3.0 / fan_in)
        s = scale_last if i == len(sizes) - 2 else 1.0
        layers.append(
            {
                "w": s * jax.random.uniform(kw, (fan_in, fan_out), minval=-bound, maxval=bound),
                "b": s * jax.random.uniform(kb, (fan_out,), minval=-bound, maxval=bound),
            }
        )
    return layers


def gelu(x, approximate: bool = False):
    """GELU activation (``jax.nn.gelu``).

    Parameters
    ----------
    x : array
        Input.
    approximate : bool
        Use the tanh approximation.

    Returns
    -------
    jax.Array
        GELU(x).
    """
    return jax.nn.gelu(x, approximate=approximate)


def apply_mlp(layers, x, approximate_gelu: bool = False):
    """Forward pass; hidden layers GELU, output identity.

    Parameters
    ----------
    layers : list of dict
        The MLP (``init_mlp``).
    x : array (..., fan_in)
        Input.
    approximate_gelu : bool
        Use the tanh approximation of GELU.

    Returns
    -------
    jax.Array
        Output, shape (..., fan_out).
    """
    for layer in layers[:-1]:
        x = gelu(x @ layer["w"] + layer["b"], approximate_gelu)
    last = layers[-1]
    return x @ last["w"] + last["b"]


def response_features(y, n_categories_max: int):
    """Encoder input for responses ``y`` (B, I), missing coded -1.

    The one-hot code of each response over ``n_categories_max`` categories (all zeros for a
    missing cell) followed by the observation mask, so a missing answer is never confused with
    an answer.

    Parameters
    ----------
    y : array (B, I)
        Responses, -1 for missing.
    n_categories_max : int
        Kmax.

    Returns
    -------
    jax.Array
        Features, shape (B, I * Kmax + I), float32.
    """
    observed = y >= 0
    onehot = jax.nn.one_hot(jnp.where(observed, y, 0), n_categories_max, dtype=jnp.float32)
    onehot = onehot * observed[..., None]
    flat = onehot.reshape(y.shape[:-1] + (-1,))
    return jnp.concatenate([flat, observed.astype(jnp.float32)], axis=-1)


def n_features(n_items: int, n_categories_max: int) -> int:
    """Width of ``response_features``: I * Kmax + I.

    Parameters
    ----------
    n_items : int
        I.
    n_categories_max : int
        Kmax.

    Returns
    -------
    int
        Features per person.
    """
    return n_items * n_categories_max + n_items
