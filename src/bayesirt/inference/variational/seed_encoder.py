"""Seed 003's implicit encoder for IWAVB (``IWAVBSettings(encoder_form="seed")``).

The seed's encoder is one feedforward network that takes the noise as an input beside the
responses ("AVB incorporates epsilon as an additional input earlier in the inference process";
sections 2.5 and 3.1): z = MLP([x, eps]) with GELU hidden layers. Adaptive contrast then
standardises each draw with "the mean mu(x) and variance sigma^2(x) of q" (section 3.2, eq. 23).
The seed does not say how those moments are obtained from an implicit q; here they are the
mean and standard deviation of the person's own draws in the step (R of them in training, n in
evaluation; Mescheder et al. 2017 estimate them from samples too), held fixed in the gradient
(the contrast r_alpha is an auxiliary that adapts between steps). That is this project's
reading. The project's own encoder (``encoder_form="residual"``: location and scale functions of
x alone, and a noise branch) is in ``inference.variational.iwavb``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayesirt.inference.variational import networks

sg = jax.lax.stop_gradient


def init(key, n_features: int, noise_dim: int, hidden: int, n_factors: int) -> dict:
    """The encoder MLP, [x features, eps] -> one GELU hidden layer of ``hidden`` -> z (P).

    Parameters
    ----------
    key : jax.Array
        PRNG key of the MLP's weights.
    n_features : int
        F, response features per person.
    noise_dim : int
        D, the noise's dimension.
    hidden : int
        Width of the hidden layer.
    n_factors : int
        P, the latent dimension.

    Returns
    -------
    dict
        ``{"net": mlp}``, the MLP (F + D) -> hidden -> P of ``networks.init_mlp``.
    """
    return {"net": networks.init_mlp(key, (n_features + noise_dim, hidden, n_factors))}


def encode(encoder, feats, eps, log_sigma_bounds, approximate_gelu: bool = False):
    """Draws z = MLP([x, eps]) standardised by their own moments: feats (B, F), eps (R, B, D) ->
    z~ (R, B, P), mu (B, P), log sigma (B, P), with mu + exp(log sigma) z~ = z (gradient
    through z alone).

    Parameters
    ----------
    encoder : dict
        ``{"net": mlp}``, as :func:`init` builds it.
    feats : array (B, F)
        Response features of the batch's persons.
    eps : array (R, B, D)
        Standard normal noise, R draws per person.
    log_sigma_bounds : tuple of float
        (low, high) bounds log sigma is clipped to.
    approximate_gelu : bool
        Use the tanh approximation of GELU.

    Returns
    -------
    tuple of jax.Array
        z~ (R, B, P); mu (B, P) and log sigma (B, P), the mean and log sd of each person's R
        draws, held fixed in the gradient.
    """
    # the first layer split as in ``iwavb_networks.discriminator``: its x part once per person, not once
    # per draw (the same function as the layer applied to [x, eps])
    first = encoder["net"][0]
    n_feat = feats.shape[-1]
    h = networks.gelu((feats @ first["w"][:n_feat])[None] + eps @ first["w"][n_feat:] + first["b"], approximate_gelu)
    z = networks.apply_mlp(encoder["net"][1:], h, approximate_gelu)
    mu = sg(z.mean(0))
    log_sigma = sg(jnp.clip(jnp.log(z.std(0) + 1e-12), *log_sigma_bounds))
    return (z - mu) * jnp.exp(-log_sigma), mu, log_sigma
