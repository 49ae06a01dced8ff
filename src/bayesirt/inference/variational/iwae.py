"""Importance-weighted autoencoder (IWAE) for multidimensional GRM item factor analysis.

Urban and Bauer (2021), as summarised in seed 003 section 3.3. The decoder is the
multidimensional GRM (``bayesirt.models.mgrm``: its loadings, ordered intercepts and, in
confirmatory fits, the factor correlations); the encoder is an MLP from a person's responses
(one-hot codes with zeros for missing cells, plus the observation mask) to the mean and log
standard deviation of a diagonal Gaussian q(z | x) (the paper's choice), or optionally
(``full_covariance``) also the strictly lower part of a Cholesky factor, so q can carry the
posterior correlation between factors that correlated factors induce. With R draws z_r = mu + sigma * eps_r,

    log w_r = log p(x, z_r) - log q(z_r | x),    IW-ELBO = log (1/R) sum_r w_r     (eq. 24)

and the loss is minus the IW-ELBO averaged over the persons of a minibatch, with the doubly
reparameterized (DReG) encoder gradient and the optional KL/entropy warm-up of ``iw_bound``
(shared with ``iwavb``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.training import FitResult, Problem, TrainSettings, train_problem
from bayesirt.inference.variational import networks, seed_training
from bayesirt.inference.variational.iw_bound import (
    dreg_log_weights,
    dreg_objective,
    iw_elbo,
    iw_problem,
    log_weights,
    warmup_beta,
)
from bayesirt.models import mgrm

sg = jax.lax.stop_gradient
LOG_2PI = math.log(2.0 * math.pi)


@dataclass(frozen=True)
class IWAESettings:
    """Settings of :func:`fit` (the model's structure, ``mgrm.Structure``, is its own argument);
    ``train``: the training driver's settings (its learning rate is replaced by AdamW's below)."""

    n_importance: int = 5  # R, importance samples per person in training
    hidden: tuple = (100,)  # encoder hidden layers (paper 4.2: one layer of 100)
    dreg: bool = True  # doubly reparameterized encoder gradients (False: plain IWAE gradient)
    full_covariance: bool = False  # q with a full (Cholesky) covariance instead of diagonal
    learning_rate: float = 1e-3  # AdamW base learning rate (paper: 1e-3)
    weight_decay: float = 0.01  # AdamW decoupled weight decay, applied to network weights only
    approximate_gelu: bool = False
    log_sigma_bounds: tuple = (-7.0, 3.0)
    warmup_steps: int = 0  # KL/entropy warm-up: steps over which beta goes 0 -> 1 (0: none; see warmup_beta)
    seed: seed_training.SeedOptimizer | None = None  # seed 003's AdamW, cyclical rate and init (iwae_seed)
    train: TrainSettings = field(default_factory=TrainSettings)


# ----------------------------------------------------------------------------- IWAE


def init(key, st: mgrm.Structure, config: IWAESettings, responses=None) -> dict:
    """Initial parameters: the GRM's (``mgrm.init_params``) and the encoder MLP.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAESettings
        Encoder hidden layers and covariance form.
    responses : array (N, I), optional
        Responses passed to ``mgrm.init_params`` for data-based starting values.

    Returns
    -------
    dict
        ``{"model", "encoder"}``; the encoder's input is ``networks.response_features`` and
        its output 2 P (plus P (P - 1) / 2 with ``full_covariance``).
    """
    k_model, k_enc = jax.random.split(key)
    n_in = networks.n_features(st.n_items, st.max_categories)
    return {
        "model": mgrm.init_params(k_model, st, responses),
        "encoder": networks.init_mlp(k_enc, (n_in, *config.hidden, _n_out(st.n_factors, config)), scale_last=0.1),
    }


def _n_out(p, config):
    return 2 * p + (p * (p - 1) // 2 if config.full_covariance else 0)


def encode(encoder, y, st: mgrm.Structure, config: IWAESettings):
    """Gaussian q(z | x) = N(mu, L L'): returns mu (B, P), log of diag(L) (B, P) and the
    strictly lower part of L (B, P, P; zeros for the diagonal encoder).

    Parameters
    ----------
    encoder : list of dict
        The encoder MLP.
    y : array (B, I)
        Integer response codes, -1 for missing.
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAESettings
        Covariance form, GELU form and the bounds on log sigma.

    Returns
    -------
    tuple of jax.Array
        mu (B, P), log sigma (B, P) clipped to ``config.log_sigma_bounds``, and the strictly
        lower part of L (B, P, P).
    """
    p = st.n_factors
    out = networks.apply_mlp(encoder, networks.response_features(y, st.max_categories), config.approximate_gelu)
    mu, log_sigma = out[..., :p], jnp.clip(out[..., p : 2 * p], *config.log_sigma_bounds)
    lower = jnp.zeros(mu.shape + (p,), mu.dtype)
    if config.full_covariance and p > 1:
        rows, cols = np.tril_indices(p, -1)
        lower = lower.at[..., rows, cols].set(out[..., 2 * p :])
    return mu, log_sigma, lower


def gaussian_draw(mu, log_sigma, lower, eps):
    """z = mu + L eps with L = diag(exp(log_sigma)) + lower; eps (R, B, P).

    Parameters
    ----------
    mu : array (B, P)
        Means.
    log_sigma : array (B, P)
        Log of L's diagonal.
    lower : array (B, P, P)
        Strictly lower part of L.
    eps : array (R, B, P)
        Standard normal draws.

    Returns
    -------
    jax.Array
        z, shape (R, B, P).
    """
    return mu + jnp.exp(log_sigma) * eps + jnp.einsum("bij,rbj->rbi", lower, eps)


def gaussian_log_q(z, mu, log_sigma, lower=None):
    """log N(z; mu, L L'), solving L eps = z - mu by forward substitution (P is small).

    Parameters
    ----------
    z : array (..., B, P)
        Points.
    mu : array (B, P)
        Means.
    log_sigma : array (B, P)
        Log of L's diagonal.
    lower : array (B, P, P), optional
        Strictly lower part of L (None: diagonal L).

    Returns
    -------
    jax.Array
        The log density, shape (..., B).
    """
    d = z - mu
    if lower is None:
        u = d * jnp.exp(-log_sigma)
    else:
        p = z.shape[-1]
        cols = []
        for i in range(p):  # row i of L eps = d: eps_i = (d_i - sum_{j<i} L_ij eps_j) / L_ii
            acc = d[..., i]
            for j in range(i):
                acc = acc - lower[..., i, j] * cols[j]
            cols.append(acc * jnp.exp(-log_sigma[..., i]))
        u = jnp.stack(cols, -1)
    return jnp.sum(-0.5 * u * u - log_sigma, -1) - 0.5 * z.shape[-1] * LOG_2PI


def loss_fn(st: mgrm.Structure, config: IWAESettings):
    """``loss(params, key, batch)`` for the training driver: minus the mean IW-ELBO.

    Parameters
    ----------
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAESettings
        Importance samples, DReG, encoder and warm-up settings.

    Returns
    -------
    callable
        ``loss(params, key, batch)``: a scalar, minus the mean over ``batch["y"]`` (B, I) of
        the IW-ELBO (annealed during a warm-up), with the DReG gradient when ``config.dreg``.
    """
    R = config.n_importance

    def loss(params, key, batch):
        y = batch["y"]
        beta = warmup_beta(config.warmup_steps, batch)
        mu, log_sigma, lower = encode(params["encoder"], y, st, config)
        eps = jax.random.normal(key, (R,) + mu.shape)
        z = gaussian_draw(mu, log_sigma, lower, eps)
        low = lower if config.full_covariance else None
        if config.dreg:
            # log q with its parameters held fixed: only the path through z is differentiated
            def log_w_fn(model, zz, aux):
                yy, m, ls, lw = aux
                return log_weights(model, yy, zz, gaussian_log_q(zz, m, ls, lw), st, beta)

            aux = (y, sg(mu), sg(log_sigma), None if low is None else sg(low))
            log_w = dreg_log_weights(log_w_fn, params["model"], z, aux, beta)
            value, surrogate = dreg_objective(log_w)
        else:
            log_w = log_weights(params["model"], y, z, gaussian_log_q(z, mu, log_sigma, low), st, beta)
            surrogate = iw_elbo(log_w)
            value = sg(surrogate)
        return -jnp.mean(value + surrogate - sg(surrogate))

    return loss


_init = init  # for ``fit``, whose keyword ``init`` hides the function


def problem(
    key,
    y,
    structure: mgrm.Structure,
    settings: IWAESettings = IWAESettings(),
    *,
    init: dict | None = None,
    label: str = "iwae",
) -> Problem:
    """The IWAE's fit, ready for the training driver.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split into the initialisation's key and the training driver's.
    y : array (N, I)
        Integer response codes, -1 for missing.
    structure : mgrm.Structure
        The multidimensional GRM: items, categories, factors, loading pattern.
    settings : IWAESettings
        Importance samples, encoder, AdamW, warm-up, and the training driver's settings
        (``train``; with ``warmup_steps`` the convergence rule starts only after the warm-up,
        ``fit_settings``).
    init : dict, optional
        Starting parameters (``{"model", "encoder"}``; ``iwae.init`` with the first half of
        ``key`` by default).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit for the training driver (``train_problem``) or, with others of its kind, the
        bulk driver (``bulk.train_block``). Its result's ``params["model"]`` are the GRM's
        parameters, beside the encoder; a loss that becomes
        non-finite raises ``training.FitDivergedError`` (a single fit) or stops that fit alone
        (a block).
    """
    rates = {"model": settings.learning_rate, "encoder": settings.learning_rate}
    return iw_problem(key, y, structure, settings, _init, rates, loss_fn(structure, settings), init, label)


def fit(
    key,
    y,
    structure: mgrm.Structure,
    settings: IWAESettings = IWAESettings(),
    *,
    init: dict | None = None,
    label: str = "iwae",
) -> FitResult:
    """Fit the IWAE by the training driver: ``training.train_problem`` of ``problem``'s fit
    (the parameters, the returned result and a non-finite loss are as ``problem`` says).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    y : array (N, I)
        Integer response codes, -1 for missing.
    structure : mgrm.Structure
        The multidimensional GRM.
    settings : IWAESettings
        As for ``problem``.
    init : dict, optional
        Starting parameters (``{"model", "encoder"}``).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.FitResult
        The fit; ``params["model"]`` are the GRM's parameters, beside the encoder.
    """
    return train_problem(problem(key, y, structure, settings, init=init, label=label))


def sampler(st: mgrm.Structure, config: IWAESettings):
    """The fitted q as an importance-sampling proposal with its parameters as an argument:
    ``draw(params, key, y, R) -> (z (R, B, P), log_q (R, B))``; one function for every fit of
    the same structure and settings, so that their compiled programs are shared.

    Parameters
    ----------
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAESettings
        The fit's settings (encoder and covariance form).

    Returns
    -------
    callable
        ``draw(params, key, y, R)``: draws z (R, B, P) from q(z | x) for ``y`` (B, I) and
        their log q (R, B).
    """

    def draw(params, key, y, n):
        mu, log_sigma, lower = encode(params["encoder"], y, st, config)
        z = gaussian_draw(mu, log_sigma, lower, jax.random.normal(key, (n,) + mu.shape))
        return z, gaussian_log_q(z, mu, log_sigma, lower if config.full_covariance else None)

    return draw


def proposal(params, st: mgrm.Structure, config: IWAESettings):
    """The fitted q as an importance-sampling proposal for ``evaluation.loglik``:
    ``draw(key, y, R) -> (z (R, B, P), log_q (R, B))``.

    Parameters
    ----------
    params : dict
        The fit's parameters (``{"model", "encoder"}``).
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAESettings
        The fit's settings.

    Returns
    -------
    functools.partial
        ``sampler(st, config)`` with ``params`` bound.
    """
    return partial(sampler(st, config), params)


def posterior_means(params, st: mgrm.Structure, config: IWAESettings, responses, batch: int = 4096):
    """Encoder means of the factor scores, (N, P).

    Parameters
    ----------
    params : dict
        The fit's parameters (``{"model", "encoder"}``).
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAESettings
        The fit's settings.
    responses : array (N, I)
        Integer response codes, -1 for missing.
    batch : int
        Persons per encoder call.

    Returns
    -------
    numpy.ndarray
        Means of q(z | x), shape (N, P).
    """
    f = jax.jit(lambda y: encode(params["encoder"], y, st, config)[0])
    y = np.asarray(responses)
    return np.concatenate([np.asarray(f(jnp.asarray(y[i : i + batch], jnp.int8))) for i in range(0, y.shape[0], batch)])
