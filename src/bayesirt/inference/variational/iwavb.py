"""Importance-weighted adversarial variational Bayes (IWAVB) for multidimensional GRM IFA.

Seed 003, sections 2.4 and 3 (Algorithm 2): adversarial variational Bayes (Mescheder et al.
2017) with adaptive contrast and importance weighting.

Players
-------
* decoder theta: the multidimensional GRM (``bayesirt.models.mgrm``), prior N(0, Sigma);
* encoder phi: an implicit q(z | x) that takes noise as an input. Ours is
      h = GELU(W x_feat + b)                       (x only: responses one-hot + mask)
      mu(x), log sigma(x) = linear(h)              (location and scale, functions of x only)
      u = eps[:P] + f([h, eps])                    (f an MLP; eps ~ N(0, I_noise_dim))
      z = mu(x) + sigma(x) * u
  so z~ = (z - mu(x)) / sigma(x) = u: the standardised draw of the adaptive contrast (eq. 23).
  The residual form makes q start as the Gaussian an IWAE would use, and f lets it become any
  shape (skewed, multimodal, correlated);
* discriminator psi: T(x, z~), an MLP on [x_feat, z~], trained with the logistic objective of
  eq. (11) to tell draws z~ ~ q~(. | x) (label 1) from zeta ~ N(0, I) (label 0) — Algorithm 2's
  objective d_i.

Gradients
---------
An implicit q has no computable d log q(z | x) / d phi at fixed z, which the plain
importance-weighted gradient needs. The doubly reparameterized estimator (DReG, as in
``iwae``) needs only the path derivative d log q(z | x) / d z at fixed phi, which T provides:
d/dz [T(x, (z - mu)/sigma) - 1/2 |(z - mu)/sigma|^2] with mu, sigma and psi held fixed. So the
encoder gradient is sum_r w~_r^2 (d log w_r / d z_r)(d z_r / d phi), the decoder gradient
sum_r w~_r grad_theta log w_r (computed together, see ``iw_bound.dreg_log_weights``), and the
discriminator gradient that of d_i with the draws held fixed. With f = 0 and T = 0 the method
is exactly IWAE with DReG.

Stabilisers (not in the paper; each found necessary on the 8k benchmark, where without them
the encoder learnt to fool T and the IW-ELBO ran above the true log-likelihood)
-----------------------------------------------------------------------------------------
* T contains a learnable diagonal quadratic in z~ (see ``discriminator``), so the implied
  log q~ decays like a Gaussian instead of being unbounded where T is linear;
* a gauge penalty asks u to have mean 0 and second moment 1 per person (see ``loss_fn``). It
  restricts no q (location and scale can always move into mu(x), sigma(x)) and it is what
  keeps q~ near N(0, I), the point of adaptive contrast, which the paper obtains by
  standardising with q's moments.

All three updates are simultaneous (one step, Algorithm 2) with AdamW and separate learning
rates for the discriminator and for the encoder/decoder (``optax.multi_transform``). The loss
value returned to the training driver is minus the IW-ELBO (the discriminator term enters as
``d - stop_gradient(d)``: gradient only). ``warmup_steps`` anneals log p(z) - log q(z | x)
inside the weights as in ``iwae`` (``iw_bound``; the discriminator's objective is not annealed).
The implicit encoder, the discriminator and the log q(z | x) they imply (a change of variables
that keeps the Jacobian Algorithm 2 leaves out) are in ``iwavb_networks``.

The discriminator's three autodiff passes (weights, draws, contrast) are kept plain: a fused
pass with a hand-written backward, and a cheaper GELU, ran slower on CPU (Performance page).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.training import FitResult, Problem, TrainSettings, train_problem
from bayesirt.inference.variational import networks, seed_encoder, seed_training
from bayesirt.inference.variational.iw_bound import (
    dreg_log_weights,
    dreg_objective,
    iw_problem,
    log_weights,
    warmup_beta,
)
from bayesirt.inference.variational.iwavb_networks import discriminator, encode, log_q_from_t
from bayesirt.models import mgrm

sg = jax.lax.stop_gradient


@dataclass(frozen=True)
class IWAVBSettings:
    """Settings of :func:`fit` (the model's structure, ``mgrm.Structure``, is its own argument);
    ``train``: the training driver's settings (its learning rate is replaced by AdamW's)."""

    n_importance: int = 5  # R
    encoder_hidden: int = 128  # trunk width (paper 4.2: one hidden layer of 128)
    noise_hidden: tuple = (64,)  # hidden layers of the noise-shaping branch f
    noise_dim: int | None = None  # dimension of eps (default: P)
    discriminator_hidden: tuple = (256, 128)  # paper 4.2: two hidden layers, 256 and 128
    n_contrast: int | None = None  # q~ and N(0, I) draws per person for the discriminator (None: R)
    learning_rate: float = 1e-3  # encoder and decoder (paper: 1e-3)
    discriminator_learning_rate: float = 1e-2  # paper: 1e-2
    weight_decay: float = 0.01
    implicit: bool = True  # False: u = eps (a Gaussian q; ablation: T should learn ~0)
    gauge_weight: float = 10.0  # weight of the penalty keeping u standardised (see loss_fn)
    approximate_gelu: bool = False
    log_sigma_bounds: tuple = (-7.0, 3.0)
    warmup_steps: int = 0  # KL/entropy warm-up (see iwae.warmup_beta); 0: none
    # switches between our additions and seed 003's IWAVB as written (iwavb_seed turns them off)
    encoder_form: str = "residual"  # "seed": z = MLP([x, eps]), moments from the draws (seed_encoder)
    quadratic_term: bool = True  # T's learnable diagonal quadratic in z~ (see discriminator)
    jacobian_in_weight: bool = True  # log q with (P/2) log 2 pi + sum log sigma (module doc)
    seed: seed_training.SeedOptimizer | None = None  # the seed's AdamW, cyclical rate and init
    train: TrainSettings = field(default_factory=TrainSettings)


def _noise_dim(st, config):
    return config.noise_dim or st.n_factors


def init(key, st: mgrm.Structure, config: IWAVBSettings, responses=None) -> dict:
    """Initial parameters: the GRM's (``mgrm.init_params``), the encoder and the discriminator.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAVBSettings
        Widths of the encoder's trunk, noise branch and discriminator; noise dimension.
    responses : array (N, I), optional
        Responses passed to ``mgrm.init_params`` for data-based starting values.

    Returns
    -------
    dict
        ``{"model", "encoder", "discriminator"}``: the encoder's ``trunk``, ``head`` and
        ``noise`` MLPs; the discriminator's ``net`` MLP and ``log_precision`` (P,), zeros.
    """
    k_model, k_trunk, k_head, k_noise, k_disc = jax.random.split(key, 5)
    n_in = networks.n_features(st.n_items, st.max_categories)
    p, h = st.n_factors, config.encoder_hidden
    if config.encoder_form == "seed":
        encoder = seed_encoder.init(k_trunk, n_in, _noise_dim(st, config), h, p)
    else:
        encoder = {
            "trunk": networks.init_mlp(k_trunk, (n_in, h)),
            "head": networks.init_mlp(k_head, (h, 2 * p), scale_last=0.1),
            "noise": networks.init_mlp(k_noise, (h + _noise_dim(st, config), *config.noise_hidden, p), scale_last=0.1),
        }
    disc = {
        "net": networks.init_mlp(k_disc, (n_in + p, *config.discriminator_hidden, 1), scale_last=0.01),
        "log_precision": jnp.zeros(p),
    }
    return {"model": mgrm.init_params(k_model, st, responses), "encoder": encoder, "discriminator": disc}


def loss_fn(st: mgrm.Structure, config: IWAVBSettings):
    """``loss(params, key, batch)`` for the training driver: minus the mean IW-ELBO, with the
    discriminator's objective and the gauge penalty entering as gradients only.

    Parameters
    ----------
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAVBSettings
        Importance samples, encoder, discriminator, gauge penalty and warm-up settings.

    Returns
    -------
    callable
        ``loss(params, key, batch)``: a scalar whose value is minus the mean over ``batch["y"]``
        (B, I) of the IW-ELBO (annealed during a warm-up).
    """
    R = config.n_importance

    def loss(params, key, batch):
        y = batch["y"]
        beta = warmup_beta(config.warmup_steps, batch)
        k_eps, k_zeta = jax.random.split(key)
        feats = networks.response_features(y, st.max_categories)
        eps = jax.random.normal(k_eps, (R, y.shape[0], _noise_dim(st, config)))
        u, mu, log_sigma = encode(params["encoder"], feats, eps, config)
        z = mu + jnp.exp(log_sigma) * u

        # importance weights: T with psi fixed; mu, sigma fixed (path derivative only)
        def log_w_fn(model, zz, aux):
            yy, ff, disc, m, ls = aux
            zt = (zz - m) * jnp.exp(-ls)
            log_q = log_q_from_t(discriminator(disc, ff, zt, config), zt, ls, config.jacobian_in_weight)
            return log_weights(model, yy, zz, log_q, st, beta)

        aux = (y, feats, sg(params["discriminator"]), sg(mu), sg(log_sigma))
        log_w = dreg_log_weights(log_w_fn, params["model"], z, aux, beta)
        value, surrogate = dreg_objective(log_w)

        # discriminator objective d_i (Algorithm 2): q~-draws labelled 1, N(0, I) draws 0
        n_c = min(config.n_contrast or R, R)
        zeta = jax.random.normal(k_zeta, (n_c,) + u.shape[1:])
        t_q = discriminator(params["discriminator"], feats, sg(u[:n_c]), config)
        t_0 = discriminator(params["discriminator"], feats, zeta, config)
        d = jnp.mean(jax.nn.log_sigmoid(t_q) + jax.nn.log_sigmoid(-t_0))

        # gauge fixing: z = mu + sigma * u is unchanged by moving location and scale between
        # (mu, sigma) and u, so asking E[u | x] = 0 and E[u^2 | x] = 1 per person restricts no
        # q; it keeps q~ at the moments of N(0, I), where the discriminator can follow it (the
        # adaptive contrast), and stops the encoder from collapsing q~ to a point (which the
        # discriminator cannot score and the importance weights would exploit). The squared
        # deviations are estimated without bias from two disjoint halves of the R draws,
        # (a_1 - c)(a_2 - c), so the penalty does not also reward low-variance moment
        # estimates (which would push q~ towards two-point distributions). Gradient only.
        half = R // 2
        if half >= 1:
            ua, ub = u[:half], u[half : 2 * half]
            gauge = jnp.mean(ua, 0) * jnp.mean(ub, 0) + (jnp.mean(ua * ua, 0) - 1.0) * (jnp.mean(ub * ub, 0) - 1.0)
            gauge = config.gauge_weight * jnp.mean(jnp.sum(gauge, -1))
        else:
            gauge = jnp.zeros(())

        return -jnp.mean(value + surrogate - sg(surrogate)) - (d - sg(d)) + (gauge - sg(gauge))

    return loss


_init = init  # for ``fit``, whose keyword ``init`` hides the function


def problem(
    key,
    y,
    structure: mgrm.Structure,
    settings: IWAVBSettings = IWAVBSettings(),
    *,
    init: dict | None = None,
    label: str = "iwavb",
) -> Problem:
    """The IWAVB's fit, ready for the training driver.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split into the initialisation's key and the training driver's.
    y : array (N, I)
        Integer response codes, -1 for missing.
    structure : mgrm.Structure
        The multidimensional GRM: items, categories, factors, loading pattern.
    settings : IWAVBSettings
        Importance samples, encoder, noise branch and discriminator, AdamW, gauge penalty,
        warm-up, and the training driver's settings (``train``).
    init : dict, optional
        Starting parameters (``{"model", "encoder", "discriminator"}``; ``iwavb.init`` with
        the first half of ``key`` by default).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit for the training driver (``train_problem``) or, with others of its kind, the
        bulk driver (``bulk.train_block``). Its result's ``params["model"]`` are the GRM's
        parameters, beside the encoder and the discriminator; a loss that becomes
        non-finite raises ``training.FitDivergedError`` (a single fit) or stops that fit alone
        (a block).
    """
    rates = {
        "model": settings.learning_rate,
        "encoder": settings.learning_rate,
        "discriminator": settings.discriminator_learning_rate,
    }
    return iw_problem(key, y, structure, settings, _init, rates, loss_fn(structure, settings), init, label)


def fit(
    key,
    y,
    structure: mgrm.Structure,
    settings: IWAVBSettings = IWAVBSettings(),
    *,
    init: dict | None = None,
    label: str = "iwavb",
) -> FitResult:
    """Fit the IWAVB by the training driver: ``training.train_problem`` of ``problem``'s fit
    (the parameters, the returned result and a non-finite loss are as ``problem`` says).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    y : array (N, I)
        Integer response codes, -1 for missing.
    structure : mgrm.Structure
        The multidimensional GRM.
    settings : IWAVBSettings
        As for ``problem``.
    init : dict, optional
        Starting parameters (``{"model", "encoder", "discriminator"}``).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.FitResult
        The fit; ``params["model"]`` are the GRM's parameters, beside the encoder and the
        discriminator.
    """
    return train_problem(problem(key, y, structure, settings, init=init, label=label))


def sampler(st: mgrm.Structure, config: IWAVBSettings):
    """The fitted implicit q as an importance-sampling proposal with its parameters as an
    argument, ``draw(params, key, y, n)``, with log q from the discriminator (so the estimate
    inherits T's approximation error; use the method-independent estimators of
    ``evaluation.loglik`` to compare methods).

    Parameters
    ----------
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAVBSettings
        The fit's settings (encoder, noise dimension, discriminator).

    Returns
    -------
    callable
        ``draw(params, key, y, n)``: draws z (n, B, P) from q(z | x) for ``y`` (B, I) and
        their log q (n, B).
    """

    def draw(params, key, y, n):
        feats = networks.response_features(y, st.max_categories)
        eps = jax.random.normal(key, (n, y.shape[0], _noise_dim(st, config)))
        u, mu, log_sigma = encode(params["encoder"], feats, eps, config)
        z = mu + jnp.exp(log_sigma) * u
        t = discriminator(params["discriminator"], feats, u, config)
        # the density eq. 27 divides by, Jacobian included whatever the training weight used
        return z, log_q_from_t(t, u, log_sigma)

    return draw


def proposal(params, st: mgrm.Structure, config: IWAVBSettings):
    """``sampler``'s draw with the fit's parameters, ``draw(key, y, n)``, for ``evaluation.loglik``.

    Parameters
    ----------
    params : dict
        The fit's parameters (``{"model", "encoder", "discriminator"}``).
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAVBSettings
        The fit's settings.

    Returns
    -------
    functools.partial
        ``sampler(st, config)`` with ``params`` bound.
    """
    return partial(sampler(st, config), params)


def posterior_means(
    params, st: mgrm.Structure, config: IWAVBSettings, responses, key=None, n_draws: int = 100, batch: int = 2048
):
    """Monte Carlo means of the implicit q per person, (N, P).

    Parameters
    ----------
    params : dict
        The fit's parameters.
    st : mgrm.Structure
        The multidimensional GRM.
    config : IWAVBSettings
        The fit's settings.
    responses : array (N, I)
        Integer response codes, -1 for missing.
    key : jax.Array, optional
        PRNG key (default ``jax.random.key(0)``), folded with each batch's start row.
    n_draws : int
        Draws per person.
    batch : int
        Persons per call.

    Returns
    -------
    numpy.ndarray
        Means of the draws of q(z | x), shape (N, P).
    """
    key = jax.random.key(0) if key is None else key

    @jax.jit
    def f(k, y):
        feats = networks.response_features(y, st.max_categories)
        eps = jax.random.normal(k, (n_draws, y.shape[0], _noise_dim(st, config)))
        u, mu, log_sigma = encode(params["encoder"], feats, eps, config)
        return (mu + jnp.exp(log_sigma) * u).mean(0)

    y = np.asarray(responses)
    return np.concatenate(
        [
            np.asarray(f(jax.random.fold_in(key, i), jnp.asarray(y[i : i + batch], jnp.int8)))
            for i in range(0, y.shape[0], batch)
        ]
    )
