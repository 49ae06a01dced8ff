"""Importance-weighted autoencoder (IWAE) for multidimensional GRM item factor analysis.

Urban and Bauer (2021), as summarised in seed 003 section 3.3. The decoder is the
multidimensional GRM (``bayesirt.models.mgrm``: its loadings, ordered intercepts and, in
confirmatory fits, the factor correlations); the encoder is an MLP from a person's responses
(one-hot codes with zeros for missing cells, plus the observation mask) to the mean and log
standard deviation of a diagonal Gaussian q(z | x) (the paper's choice), or optionally
(``full_covariance``) also the strictly lower part of a Cholesky factor, so q can carry the
posterior correlation between factors that correlated factors induce. With R draws z_r = mu + sigma * eps_r,

    log w_r = log p(x, z_r) - log q(z_r | x),    IW-ELBO = log (1/R) sum_r w_r     (eq. 24)

and the loss is minus the IW-ELBO averaged over the persons of a minibatch.

Gradients. For the decoder (theta) the usual estimator sum_r w~_r grad_theta log w_r, with
normalised weights w~_r = w_r / sum w. For the encoder (phi) the doubly reparameterized
estimator (DReG; Tucker et al. 2018), sum_r w~_r^2 (d log w_r / d z_r)(d z_r / d phi), in which
log q is evaluated with its parameters held fixed (stop-gradient) so only the path through z
is differentiated. Both come from one forward and one backward pass over the likelihood: the
draw is replaced by z'_r = sg(z_r) + sg(w~_r) (z_r - sg(z_r)), equal to z_r in value but with
its gradient scaled by w~_r, and the surrogate sum_r sg(w~_r) log w_r(theta, z'_r) is
differentiated. Its theta-gradient is sum_r w~_r grad log w_r and its phi-gradient is
sum_r w~_r^2 (d log w_r / d z_r)(d z_r / d phi), exactly the two estimators above. In code the
rescaling is a custom VJP (``dreg_log_weights``) so that the weights come from the same
forward pass and the likelihood is evaluated once per step. The loss
value reported to the training driver is the IW-ELBO itself (the surrogate enters only
through ``x - stop_gradient(x)``, which is zero in value).

Optional KL/entropy warm-up (``warmup_steps``, shared with ``iwavb``): for the first steps the
weights are log w_r = log p(x | z_r) + beta (log p(z_r) - log q(z_r | x)) with beta rising
linearly from 0 to 1 (``warmup_beta``; the step comes from the training driver inside its
jitted loop), and the DReG scale becomes w~_r (1 - beta + beta w~_r) (``dreg_log_weights``).
With ``warmup_steps = 0`` (default) the loss is computed exactly as without the option.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayesirt.inference import networks, seed_training
from bayesirt.inference.training import FitResult, Problem, TrainSettings, train_problem
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


# ----------------------------------------------------------------------------- shared pieces


def warmup_beta(warmup_steps: int, batch: dict):
    """Weight beta on log p(z) - log q(z | x) inside the importance weights (KL/entropy warm-up).

    With warm-up the log weights are log w_r = log p(x | z_r) + beta (log p(z_r) - log q(z_r | x)),
    beta = min(1, t / warmup_steps) at training step t (``batch["step"]``, which the training
    driver supplies inside its jitted loop): an annealed IW-ELBO for the first ``warmup_steps``
    steps, the exact IW-ELBO afterwards. Returns None (the exact objective, computed exactly as
    without warm-up) when ``warmup_steps`` is 0 or the batch carries no step (e.g. a loss
    evaluated outside training).

    Parameters
    ----------
    warmup_steps : int
        Steps over which beta rises from 0 to 1 (0: no warm-up).
    batch : dict
        The training batch; ``batch["step"]`` the training step, if present.

    Returns
    -------
    jax.Array or None
        beta, a float32 scalar in [0, 1]; None for the exact objective.
    """
    if warmup_steps <= 0 or batch.get("step") is None:
        return None
    return jnp.minimum(jnp.asarray(batch["step"], jnp.float32) / warmup_steps, 1.0)


def fit_settings(settings: TrainSettings, warmup_steps: int) -> TrainSettings:
    """``settings`` with ``min_steps`` raised so that the convergence rule never compares a
    window of the annealed objective with one of the exact objective (the annealed loss rises
    as beta grows, which the rule would read as a stall).

    Parameters
    ----------
    settings : TrainSettings
        The training driver's settings.
    warmup_steps : int
        Steps of the warm-up (0: none).

    Returns
    -------
    TrainSettings
        ``settings`` unchanged without warm-up, else with ``min_steps`` at least
        ``warmup_steps + 2 * settings.window``.
    """
    if warmup_steps <= 0:
        return settings
    return dataclasses.replace(settings, min_steps=max(settings.min_steps, warmup_steps + 2 * settings.window))


def adamw(
    settings: TrainSettings, learning_rates: dict, weight_decay: float, params: dict
) -> optax.GradientTransformation:
    """AdamW per top-level part of ``params`` (each with its own base learning rate), with the
    driver's global-norm clipping and exponential learning-rate decay schedule (decay rate and
    steps, floor at ``settings.min_learning_rate`` relative to ``settings.learning_rate``).

    Weight decay applies to network weights (the parts other than "model"); the GRM's own
    parameters are not shrunk (the paper decays everything; decaying loadings would bias them
    towards zero, so we do not).

    Parameters
    ----------
    settings : TrainSettings
        The training driver's settings: clipping norm, decay rate and steps, learning-rate floor.
    learning_rates : dict
        Base learning rate of each top-level part of ``params``, by name.
    weight_decay : float
        AdamW's decoupled weight decay for the parts other than ``"model"``.
    params : dict
        The parameters, whose top-level names label the parts.

    Returns
    -------
    optax.GradientTransformation
        Global-norm clipping followed by the per-part AdamW.
    """
    floor_ratio = settings.min_learning_rate / settings.learning_rate

    def part(lr, decay):
        schedule = optax.exponential_decay(
            lr, settings.lr_decay_steps, settings.lr_decay_rate, end_value=lr * floor_ratio
        )
        return optax.adamw(schedule, weight_decay=decay)

    transforms = {name: part(lr, 0.0 if name == "model" else weight_decay) for name, lr in learning_rates.items()}
    labels = {name: jax.tree.map(lambda _: name, sub) for name, sub in params.items()}  # noqa: B023  (tree.map calls it at once)
    return optax.chain(optax.clip_by_global_norm(settings.clip_norm), optax.multi_transform(transforms, labels))


def dreg_log_weights(f, theta, z, aux, beta=None):
    """``f(theta, z, aux)`` (the log weights, (R, B)) with its z-cotangent scaled by w~_r.

    Forward: log_w = f(theta, z, aux). Backward for a cotangent c: the theta part is
    c . d log_w / d theta and the z part is w~_r c_r d log_w_r / d z_r, with w~ = softmax of
    log_w over the R draws, taken from the forward pass. With c = sg(w~) (the gradient of
    sum_r sg(w~_r) log w_r) this gives the IWAE theta-gradient and the DReG path gradient
    sum_r w~_r^2 (d log w_r / d z_r) for the encoder in one forward and one backward pass.
    ``aux`` (data, fixed networks, stop-gradient statistics) receives no gradient.

    ``z`` may be a pytree of arrays whose leading axes are (R, B) (e.g. the draws together
    with quantities computed from them outside ``f``, such as a discriminator's output): every
    leaf's cotangent is scaled by the same w~_r.

    With a warm-up weight ``beta`` (see ``warmup_beta``; log w = log p(x | z) + beta (log p(z)
    - log q)) the scale is (1 - beta) + beta w~_r instead of w~_r: the DReG identity turns the
    score term -beta sum_r w~_r d log q(z_r) / d phi into -beta sum_r w~_r (1 - w~_r)
    d log w_r / d z_r d z_r / d phi, so the path gradient of the annealed objective is
    sum_r w~_r (1 - beta + beta w~_r) d log w_r / d z_r d z_r / d phi (w~_r^2 at beta = 1).

    Parameters
    ----------
    f : callable
        ``f(theta, z, aux) -> (R, B)``, the log weights.
    theta : pytree
        Decoder parameters (plain gradient).
    z : array (R, B, ...) or pytree of them
        The draws (gradient scaled by the weights).
    aux : pytree
        Further inputs of ``f``; they receive a zero cotangent.
    beta : jax.Array, optional
        Warm-up weight (``warmup_beta``); None for the exact objective.

    Returns
    -------
    jax.Array
        The log weights ``f(theta, z, aux)``, shape (R, B).
    """

    @jax.custom_vjp
    def g(theta, z, aux, beta):
        return f(theta, z, aux)

    def fwd(theta, z, aux, beta):
        out, vjp = jax.vjp(lambda t, zz: f(t, zz, aux), theta, z)
        w = jax.nn.softmax(out, axis=0)
        if beta is not None:
            w = (1.0 - beta) + beta * w
        return out, (vjp, w, aux, beta)

    def bwd(res, ct):
        vjp, w, aux, beta = res
        g_theta, g_z = vjp(ct)
        g_z = jax.tree.map(lambda gz: gz * w.reshape(w.shape + (1,) * (gz.ndim - w.ndim)), g_z)
        return (g_theta, g_z, jax.tree.map(_zero_cotangent, aux), None if beta is None else jnp.zeros_like(beta))

    g.defvjp(fwd, bwd)
    return g(theta, z, aux, beta)


def _zero_cotangent(x):
    if jnp.issubdtype(x.dtype, jnp.floating):
        return jnp.zeros_like(x)
    return np.zeros(x.shape, dtype=jax.dtypes.float0)


def dreg_objective(log_w):
    """(value, surrogate) per person from DReG-wrapped log weights (R, B): the IW-ELBO and
    sum_r sg(w~_r) log w_r, whose gradient is the estimator described in the module doc.

    Parameters
    ----------
    log_w : array (R, B)
        Log weights from ``dreg_log_weights``.

    Returns
    -------
    tuple of jax.Array
        The IW-ELBO (B,) (no gradient) and the surrogate (B,).
    """
    w = sg(jax.nn.softmax(log_w, axis=0))
    return iw_elbo(sg(log_w)), jnp.sum(w * log_w, axis=0)


def iw_elbo(log_w):
    """log (1/R) sum_r exp(log_w_r): (R, B) -> (B,).

    Parameters
    ----------
    log_w : array (R, B)
        Log importance weights.

    Returns
    -------
    jax.Array
        The IW-ELBO per person, shape (B,).
    """
    return jax.scipy.special.logsumexp(log_w, axis=0) - jnp.log(log_w.shape[0])


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


def log_weights(model, y, z, log_q, st: mgrm.Structure, beta=None):
    """log w = log p(x, z) - log q(z | x), or with a warm-up weight beta (``warmup_beta``)
    log p(x | z) + beta (log p(z) - log q(z | x)).

    Parameters
    ----------
    model : dict
        The GRM's parameters.
    y : array (B, I)
        Integer response codes, -1 for missing.
    z : array (R, B, P)
        Draws.
    log_q : array (R, B)
        log q(z | x) of the draws.
    st : mgrm.Structure
        The multidimensional GRM.
    beta : jax.Array, optional
        Warm-up weight; None for the exact weights.

    Returns
    -------
    jax.Array
        Log weights, shape (R, B).
    """
    if beta is None:
        return mgrm.log_joint(model, y, z, st) - log_q
    return mgrm.log_likelihood(model, y, z, st) + beta * (mgrm.log_prior(model, z, st) - log_q)


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
    k_init, k_fit = jax.random.split(key)
    y = np.asarray(y)
    params = _init(k_init, structure, settings, y) if init is None else init
    if init is None and settings.seed is not None:
        params = seed_training.init(k_init, structure, params)
    train_settings = fit_settings(settings.train, settings.warmup_steps)
    rates = {"model": settings.learning_rate, "encoder": settings.learning_rate}
    if settings.seed is not None:
        opt = seed_training.optimizer(settings.seed, rates, params)
    else:
        opt = adamw(train_settings, rates, settings.weight_decay, params)
    data = {"y": jnp.asarray(y, jnp.int8)}
    return Problem(loss_fn(structure, settings), params, k_fit, data, y.shape[0], train_settings, opt, label)


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
