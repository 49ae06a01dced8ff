"""IWAVB's two networks (seed 003, sections 2.4 and 3; see ``iwavb``): the implicit encoder,
which turns a person's responses and noise into draws of q(z | x), and the discriminator T(x, z~)
that contrasts the standardised draws with N(0, I), with the log q(z | x) it implies.

The encoder's ``trunk``, ``head`` and ``noise`` MLPs (or, with ``encoder_form="seed"``, the
seed's, ``seed_encoder``) and the discriminator's ``net`` and ``log_precision`` are built by
``iwavb.init``; ``config`` is an ``iwavb.IWAVBSettings``.

log q from T (a change of variables). At the optimum, T*(x, z~) = log q~(z~ | x) -
log N(z~; 0, I) (Theorem 2.1 applied to the standardised variable). Because
z = mu(x) + sigma(x) * z~ with mu, sigma functions of x only, q(z | x) = q~(z~ | x) /
prod_p sigma_p(x), hence

    log q(z | x) = T(x, z~) - 1/2 |z~|^2 - (P/2) log 2 pi - sum_p log sigma_p(x)

and the importance weight is

    log w = log p(x, z) - T(x, z~) + 1/2 |z~|^2 + (P/2) log 2 pi + sum_p log sigma_p(x).

Algorithm 2 of the paper writes log w = -T(x, z~) + 1/2 |z~|^2 + log p(x, z): the same
expression without the constant (P/2) log 2 pi and without the Jacobian sum_p log sigma_p(x).
The constant only shifts the objective, but the Jacobian depends on x and phi: leaving it out
makes exp(IW-ELBO) no estimate of p(x) (the reported log-likelihood is off by a per-person
amount) and changes which encoder maximises the objective. We keep both terms. In the
paper's encoder mu and sigma are outputs of the same network that takes eps; here they are
functions of x alone, which is what makes the change of variables above exact.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from bayesirt.inference.variational import networks, seed_encoder

LOG_2PI = math.log(2.0 * math.pi)


def encode(encoder, feats, eps, config):
    """Draws from the implicit q: feats (B, F), eps (R, B, D) -> z~ (R, B, P), mu, log_sigma (B, P).

    Parameters
    ----------
    encoder : dict
        The encoder's ``trunk``, ``head`` and ``noise`` MLPs.
    feats : array (B, F)
        ``networks.response_features`` of the responses.
    eps : array (R, B, D)
        Standard normal noise, D the noise dimension (``noise_dim``; default P).
    config : iwavb.IWAVBSettings
        ``implicit`` (False: u = eps[..., :P]), GELU form and the bounds on log sigma.

    Returns
    -------
    tuple of jax.Array
        u = z~ (R, B, P), mu (B, P) and log sigma (B, P), clipped to ``config.log_sigma_bounds``.
    """
    if config.encoder_form == "seed":
        return seed_encoder.encode(encoder, feats, eps, config.log_sigma_bounds, config.approximate_gelu)
    h = networks.gelu(feats @ encoder["trunk"][0]["w"] + encoder["trunk"][0]["b"], config.approximate_gelu)
    mu, log_sigma = jnp.split(networks.apply_mlp(encoder["head"], h), 2, axis=-1)
    log_sigma = jnp.clip(log_sigma, *config.log_sigma_bounds)
    p = mu.shape[-1]
    if not config.implicit:
        return eps[..., :p], mu, log_sigma
    hb = jnp.broadcast_to(h, eps.shape[:-1] + h.shape[-1:])
    u = eps[..., :p] + networks.apply_mlp(encoder["noise"], jnp.concatenate([hb, eps], -1), config.approximate_gelu)
    return u, mu, log_sigma


def discriminator(disc, feats, z_tilde, config):
    """T(x, z~) = T_net(x, z~) + 1/2 sum_p (1 - exp(s_p)) z~_p^2: feats (B, F), z~ (R, B, P) -> (R, B).

    The quadratic term (learnable s, starting at 0) is part of the discriminator. An MLP grows
    at most linearly in its input, while log N(z~; 0, I) falls quadratically; without the
    term, log q = T - 1/2 |z~|^2 + ... would be unbounded above in |z~| wherever the encoder
    has not yet been contrasted, and importance weights would reward pushing draws outwards
    (we saw the IW-ELBO run off to +300 nats on the 8k benchmark). With it, the implied
    log q~(z~ | x) = T_net - 1/2 sum exp(s_p) z~_p^2 + const decays like a Gaussian, T
    still represents any log ratio an MLP plus a diagonal quadratic can, and at
    initialisation (T_net ~ 0, s = 0) q~ is N(0, I), i.e. the method starts as IWAE. The
    first layer is split so that the x part is computed once per person, not once per draw.

    Parameters
    ----------
    disc : dict
        The discriminator: ``net`` (MLP) and ``log_precision`` s (P,).
    feats : array (B, F)
        ``networks.response_features`` of the responses.
    z_tilde : array (R, B, P)
        Standardised draws.
    config : iwavb.IWAVBSettings
        GELU form.

    Returns
    -------
    jax.Array
        T(x, z~), shape (R, B).
    """
    layers = disc["net"]
    first = layers[0]
    n_feat = feats.shape[-1]
    pre = (feats @ first["w"][:n_feat])[None] + z_tilde @ first["w"][n_feat:] + first["b"]
    x = networks.gelu(pre, config.approximate_gelu)
    for layer in layers[1:-1]:
        x = networks.gelu(x @ layer["w"] + layer["b"], config.approximate_gelu)
    t_net = (x @ layers[-1]["w"] + layers[-1]["b"])[..., 0]
    if not config.quadratic_term:
        return t_net
    return t_net + 0.5 * jnp.sum((1.0 - jnp.exp(disc["log_precision"])) * z_tilde * z_tilde, -1)


def log_q_from_t(t_value, z_tilde, log_sigma, jacobian: bool = True):
    """log q(z | x) = T - 1/2 |z~|^2 - (P/2) log 2 pi - sum log sigma (module docstring); without
    ``jacobian``, T - 1/2 |z~|^2, as seed 003's Algorithm 2 writes the weight.

    Parameters
    ----------
    t_value : array (R, B)
        The discriminator's T(x, z~).
    z_tilde : array (R, B, P)
        Standardised draws.
    log_sigma : array (B, P)
        Log scale of the encoder.

    Returns
    -------
    jax.Array
        log q(z | x), shape (R, B).
    """
    p = z_tilde.shape[-1]
    if not jacobian:
        return t_value - 0.5 * jnp.sum(z_tilde * z_tilde, -1)
    return t_value - 0.5 * jnp.sum(z_tilde * z_tilde, -1) - 0.5 * p * LOG_2PI - jnp.sum(log_sigma, -1)
