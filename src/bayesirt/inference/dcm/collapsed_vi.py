"""Collapsed variational inference for the LCDM.

The profiles Z are summed out exactly (``models.lcdm.marginal_loglik``, log-sum-exp over the L
profiles), so what remains is a smooth density in

    beta (J, K)          item coefficients (padding ignored),
    theta (L - 1,)       profile logits, pi = softmax([theta, 0]),
    log_sigma2 ()        log of the prior variance of the coefficients,

with the seed's priors (sigma^2 ~ IG(a0, b0), beta_j | sigma^2 ~ N(0, sigma^2 I), pi ~ Dir(d0)) and
the log-Jacobians of both transforms (``log |d pi / d theta| = sum_l log pi_l``;
``log sigma^2``). ``log_density`` is that density, used by both methods.

Collapsed VI: q(beta_j) = N(mu_j, C_j C_j^T) (C_j lower triangular with log-diagonal, as in
BBVI), q(theta) and q(log sigma^2) Gaussian with diagonal covariance; reparameterised gradients
(no score-function noise), the Gaussian entropies in closed form, persons in minibatches through
the project's training driver (person terms scaled by N / B). After the fit, q(Z_i) is the
posterior of the profile at the mean of q (``profile_posterior``).

NUTS on the same collapsed density (``log_density``) is ``inference.dcm.collapsed_nuts``.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.dcm.bbvi import Problem, monotone_moments, prepare  # noqa: F401  (prepare: BBVI's data preparation, public here too)
from bayesirt.inference.dcm.bbvi_family import chol_factor
from bayesirt.inference.execution import training
from bayesirt.models import lcdm


class CollapsedSettings(NamedTuple):
    """Settings of :func:`fit`.

    Attributes
    ----------
    n_samples : int
        Draws of q per step.
    init_scale : float
        Starting sd of q.
    priors : lcdm.Priors
        The model's priors.
    monotone : bool
        q on the unconstrained u of ``models.lcdm.monotone_beta``.
    train : training.TrainSettings
        The training driver's settings.
    """

    n_samples: int = 1  # draws of q per step
    init_scale: float = 0.1
    priors: lcdm.Priors = lcdm.Priors()
    monotone: bool = False  # q on the unconstrained u of models.lcdm.monotone_beta
    train: training.TrainSettings = training.TrainSettings()  # the training driver's settings


def unpack(params_draw):
    """(beta, log_pi, sigma2, log-Jacobian) from unconstrained values.

    Parameters
    ----------
    params_draw : dict
        Unconstrained values: ``beta``, ``theta`` (profile logits, L-1), ``log_sigma2``.

    Returns
    -------
    tuple
        beta (J, K), log_pi (L,), sigma^2 and the log-Jacobian of the transformation.
    """
    theta = params_draw["theta"]
    log_pi = jax.nn.log_softmax(jnp.concatenate([theta, jnp.zeros(theta.shape[:-1] + (1,))], -1))
    log_s2 = params_draw["log_sigma2"]
    return params_draw["beta"], log_pi, jnp.exp(log_s2), jnp.sum(log_pi, -1) + log_s2


def log_density(params_draw, data, priors: lcdm.Priors = lcdm.Priors(), scale: float = 1.0, monotone: bool = False):
    """Collapsed log-density in unconstrained space (profiles summed out).

    Person terms times ``scale``; with ``monotone`` the coefficients are
    ``models.lcdm.monotone_beta`` of the ``beta`` entry.

    Parameters
    ----------
    params_draw : dict
        Unconstrained values (see ``unpack``).
    data : dict
        The driver's data of a ``Problem`` (a batch of persons).
    priors : lcdm.Priors
        The model's priors.
    scale : float
        Weight of the person terms (N / B for a minibatch).
    monotone : bool
        Whether ``beta`` holds the unconstrained u.

    Returns
    -------
    jax.Array
        The log-density, a scalar.
    """
    sh = data[training.SHARED]
    beta, log_pi, sigma2, log_jac = unpack(params_draw)
    fm = sh["feature_mask"]
    if monotone:
        beta, beta_jac = lcdm.monotone_beta(beta, sh["order"])
        log_jac = log_jac + beta_jac
    beta = beta * fm
    ll = lcdm.marginal_loglik(beta, log_pi, sh["delta"], data["y_obs"], data["n_obs"]).sum()
    return (
        scale * ll
        + lcdm.log_normal_beta(beta, sigma2, fm).sum()
        + lcdm.log_dirichlet(log_pi, priors.d0)
        + lcdm.log_inv_gamma(sigma2, priors.a0, priors.b0)
        + log_jac
    )


def init_params(design: lcdm.Design, settings: CollapsedSettings = CollapsedSettings()) -> dict:
    """Starting variational parameters: q(beta) at the monotone start, the rest at 0.

    Intercept -1, main effects 2 shared among the measured attributes, interactions 0 (with
    ``monotone``, the same start in u); every sd ``init_scale``.

    Parameters
    ----------
    design : lcdm.Design
        The Q-matrix's design.
    settings : CollapsedSettings
        Starting sd and monotonicity.

    Returns
    -------
    dict
        ``mu``, ``chol_off``, ``log_diag``, ``theta_mu``, ``theta_log_sd``, ``ls2_mu``, ``ls2_log_sd``.
    """
    j, n_prof, k = design.delta.shape
    n_main = (design.order == 1).sum(1, keepdims=True)
    mu = np.where(design.order == 0, -1.0, np.where(design.order == 1, 2.0 / np.maximum(n_main, 1), 0.0))
    if settings.monotone:
        # the same start in u: softplus^-1 of the main effects; interactions 0 = -min + softplus(u)
        main = 2.0 / np.maximum(n_main, 1)
        mu = np.where(
            design.order == 1, np.log(np.expm1(main)), np.where(design.order == 2, np.log(np.expm1(main)), mu)
        )
    return {
        "mu": jnp.asarray(mu * design.feature_mask, jnp.float32),
        "chol_off": jnp.zeros((j, k, k), jnp.float32),
        "log_diag": jnp.full((j, k), np.log(settings.init_scale), jnp.float32),
        "theta_mu": jnp.zeros(n_prof - 1, jnp.float32),
        "theta_log_sd": jnp.full(n_prof - 1, np.log(settings.init_scale), jnp.float32),
        "ls2_mu": jnp.zeros([], jnp.float32),
        "ls2_log_sd": jnp.asarray(np.log(settings.init_scale), jnp.float32),
    }


def make_loss(settings: CollapsedSettings, n_persons: int):
    """Negative ELBO of a batch: -(E_q[log density] + entropy of q), reparameterised.

    Parameters
    ----------
    settings : CollapsedSettings
        Draws, priors, monotonicity.
    n_persons : int
        N.

    Returns
    -------
    callable
        ``loss(params, key, batch) -> scalar``.
    """

    def loss(params, key, batch):
        fm = batch[training.SHARED]["feature_mask"]
        scale = n_persons / batch["y_obs"].shape[0]
        s = settings.n_samples
        j, k = params["mu"].shape
        n_theta = params["theta_mu"].shape[0]
        eps = jax.random.normal(key, (s, j * k + n_theta + 1))
        c = chol_factor(params["chol_off"], params["log_diag"], fm)
        draws = {
            "beta": params["mu"] + jnp.einsum("jkl,sjl->sjk", c, eps[:, : j * k].reshape(s, j, k)) * fm,
            "theta": params["theta_mu"] + jnp.exp(params["theta_log_sd"]) * eps[:, j * k : j * k + n_theta],
            "log_sigma2": params["ls2_mu"] + jnp.exp(params["ls2_log_sd"]) * eps[:, -1],
        }
        lp = jax.vmap(lambda d: log_density(d, batch, settings.priors, scale, settings.monotone))(draws).mean()
        # Gaussian entropies in full (constants included, so the ELBO is comparable with BBVI's)
        n_dims = jnp.sum(fm) + n_theta + 1
        entropy = (
            jnp.sum(fm * params["log_diag"])
            + jnp.sum(params["theta_log_sd"])
            + params["ls2_log_sd"]
            + 0.5 * n_dims * (1.0 + jnp.log(2 * jnp.pi))
        )
        return -(lp + entropy)

    return loss


def problem(
    key,
    problem: Problem,
    settings: CollapsedSettings = CollapsedSettings(),
    *,
    init: dict | None = None,
    label: str = "collapsed_vi",
) -> training.Problem:
    """Collapsed VI's fit of one data set, ready for the training driver.

    Parameters
    ----------
    key : jax.Array
        PRNG key, handed to the training driver as it is (the start is deterministic).
    problem : Problem
        The data and the model's structure together: responses and the Q-matrix's design, as
        ``prepare(y, q)`` builds them (the DCM fits take no separate structure argument).
    settings : CollapsedSettings
        Draws per step, starting sd, priors, monotonicity, and the training driver's settings
        (``train``).
    init : dict, optional
        Starting variational parameters (``init_params`` by default).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit for the training driver (``training.train_problem``) or, with the fits of other
        data sets of the same shape, the bulk driver (``bulk.train_block``). Its result's
        ``params`` are the variational parameters (``summarize`` turns them into estimates).
    """
    if settings.monotone:
        lcdm.check_monotone_design(problem.design)
    params = init_params(problem.design, settings) if init is None else init
    loss = make_loss(settings, problem.n_persons)
    return training.Problem(loss, params, key, problem.data, problem.n_persons, settings.train, None, label)


_problem = problem  # for ``fit``, whose argument ``problem`` hides the function


def fit(
    key,
    problem: Problem,
    settings: CollapsedSettings = CollapsedSettings(),
    *,
    init: dict | None = None,
    label: str = "collapsed_vi",
) -> training.FitResult:
    """Fit collapsed VI through the training driver: ``training.train_problem`` of ``problem``'s
    fit (the arguments are ``problem``'s); a diverged fit keeps its last good state, unconverged
    (``training.keep_last_good``).

    Parameters
    ----------
    key : jax.Array
        PRNG key, handed to the training driver as it is (the start is deterministic).
    problem : Problem
        The data and the model's structure together, as ``prepare(y, q)`` builds them.
    settings : CollapsedSettings
        Draws per step, starting sd, priors, monotonicity, and the training driver's settings
        (``train``).
    init : dict, optional
        Starting variational parameters (``init_params`` by default).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.FitResult
        ``params`` are the variational parameters (``summarize`` turns them into estimates);
        losses, steps, convergence and timings as the driver reports them.
    """
    return training.keep_last_good(training.train_problem, _problem(key, problem, settings, init=init, label=label))


class CollapsedSummary(NamedTuple):
    """Means and sds of q (``summarize``).

    Attributes
    ----------
    profile_prob : numpy.ndarray (N, L)
        Posterior of each person's profile at the mean of q.
    beta_mean : numpy.ndarray (J, K)
        Means of the coefficients.
    beta_sd : numpy.ndarray (J, K)
        Their sds.
    pi_mean : numpy.ndarray (L,)
        E_q[pi], by Monte Carlo.
    pi_sd : numpy.ndarray (L,)
        Its sds.
    sigma2_mean : float
        Mean of sigma^2.
    """

    profile_prob: np.ndarray  # (N, L) posterior of each person's profile at the mean of q
    beta_mean: np.ndarray  # (J, K)
    beta_sd: np.ndarray
    pi_mean: np.ndarray  # (L,) E_q[pi], by Monte Carlo
    pi_sd: np.ndarray
    sigma2_mean: float


def summarize(key, params, problem: Problem, n_draws: int = 2000, monotone: bool = False) -> CollapsedSummary:
    """Means and sds of q; with ``monotone``, of the coefficients transformed from draws of q(u).

    Parameters
    ----------
    key : jax.Array
        PRNG key of the Monte Carlo summaries.
    params : dict
        A fit's variational parameters.
    problem : Problem
        The data set.
    n_draws : int
        Monte Carlo draws.
    monotone : bool
        Whether the fit was monotone.

    Returns
    -------
    CollapsedSummary
        Profile posteriors and the parameters' means and sds.
    """
    fm = jnp.asarray(problem.design.feature_mask)
    c = chol_factor(params["chol_off"], params["log_diag"], fm)
    sd = jnp.sqrt(jnp.einsum("jkl,jkl->jk", c, c)) * fm
    beta_mean = params["mu"] * fm
    if monotone:
        key, bkey = jax.random.split(key)
        beta_mean, sd = monotone_moments(bkey, params["mu"], c, problem.design, n_draws)
    theta = params["theta_mu"] + jnp.exp(params["theta_log_sd"]) * jax.random.normal(
        key, (n_draws,) + params["theta_mu"].shape
    )
    pi = jax.nn.softmax(jnp.concatenate([theta, jnp.zeros((n_draws, 1))], -1))
    log_pi_mean = jnp.log(pi.mean(0))
    sh = problem.data[training.SHARED]
    post = profile_posterior(beta_mean, log_pi_mean, sh["delta"], problem.data["y_obs"], problem.data["n_obs"])
    s2 = jnp.exp(params["ls2_mu"] + 0.5 * jnp.exp(2 * params["ls2_log_sd"]))
    return CollapsedSummary(
        np.asarray(post),
        np.asarray(beta_mean),
        np.asarray(sd),
        np.asarray(pi.mean(0)),
        np.asarray(pi.std(0)),
        float(s2),
    )


def profile_posterior(beta, log_pi, delta, y_obs, n_obs, chunk: int = 65536):
    """(N, L) p(z_i = l | y_i) in chunks of persons (bounded memory for large N).

    Parameters
    ----------
    beta : array (J, K)
        Coefficients.
    log_pi : array (L,)
        Profile log-probabilities.
    delta : array
        The design's indicators.
    y_obs, n_obs : array
        Observed-response statistics of the persons.
    chunk : int
        Persons per call.

    Returns
    -------
    jax.Array
        Profile posteriors, shape (N, L).
    """
    f = jax.jit(lambda yo, no: jnp.exp(lcdm.posterior_profiles(beta, log_pi, delta, yo, no)))
    return jnp.concatenate([f(y_obs[s : s + chunk], n_obs[s : s + chunk]) for s in range(0, y_obs.shape[0], chunk)])
