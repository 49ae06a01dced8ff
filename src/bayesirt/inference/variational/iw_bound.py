"""The importance-weighted bound that IWAE (``iwae``) and IWAVB (``iwavb``) maximise, its
doubly reparameterized gradient, the KL/entropy warm-up, the AdamW both train with, and their
fit for the training driver (``iw_problem``).

With R draws z_r from the encoder's q(z | x),

    log w_r = log p(x, z_r) - log q(z_r | x),    IW-ELBO = log (1/R) sum_r w_r     (seed 003, eq. 24)

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
forward pass and the likelihood is evaluated once per step. The loss value reported to the
training driver is the IW-ELBO itself (the surrogate enters only through
``x - stop_gradient(x)``, which is zero in value).

Optional KL/entropy warm-up (``warmup_steps`` of either method): for the first steps the
weights are log w_r = log p(x | z_r) + beta (log p(z_r) - log q(z_r | x)) with beta rising
linearly from 0 to 1 (``warmup_beta``; the step comes from the training driver inside its
jitted loop), and the DReG scale becomes w~_r (1 - beta + beta w~_r) (``dreg_log_weights``).
With ``warmup_steps = 0`` (default) the loss is computed exactly as without the option.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayesirt.inference.execution.training import Problem, TrainSettings
from bayesirt.inference.variational import seed_training
from bayesirt.models import mgrm

sg = jax.lax.stop_gradient


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


def iw_problem(key, y, structure: mgrm.Structure, settings, init_fn, learning_rates: dict, loss, init, label):
    """The training driver's fit of IWAE or IWAVB, built alike for both: the start, the
    optimizer over the parts named in ``learning_rates`` (the seed's, or this project's AdamW)
    and the responses as int8; only the parts, the start and the ``loss`` differ between the
    two methods.

    Parameters
    ----------
    key : jax.Array
        PRNG key; its first half draws the start, its second the fit.
    y, structure, settings, init, label
        As for ``iwae.problem`` and ``iwavb.problem``, which call this.
    init_fn : callable
        ``init_fn(key, structure, settings, y)``: the method's start where ``init`` is None
        (re-drawn as the seed does where ``settings.seed`` is set).
    learning_rates : dict
        Learning rate per part of the parameters.
    loss : callable
        The method's loss.

    Returns
    -------
    training.Problem
        The fit for the training driver (or, with others of its kind, the bulk driver).
    """
    k_init, k_fit = jax.random.split(key)
    y = np.asarray(y)
    params = init_fn(k_init, structure, settings, y) if init is None else init
    if init is None and settings.seed is not None:
        params = seed_training.init(k_init, structure, params)
    train_settings = fit_settings(settings.train, settings.warmup_steps)
    if settings.seed is not None:
        opt = seed_training.optimizer(settings.seed, learning_rates, params)
    else:
        opt = adamw(train_settings, learning_rates, settings.weight_decay, params)
    data = {"y": jnp.asarray(y, jnp.int8)}
    return Problem(loss, params, k_fit, data, y.shape[0], train_settings, opt, label)


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
    params = dict(model, ability=z)
    if beta is None:
        return mgrm.log_joint(params, y, st) - log_q
    return mgrm.log_likelihood(params, y, st) + beta * (mgrm.log_prior(params, st) - log_q)
