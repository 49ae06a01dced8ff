"""Black-box variational inference for the LCDM, as seed 002 derives it: settings, data, fit, summary.

Model (``models.lcdm``): sigma^2 ~ IG(a0, b0); beta_j | sigma^2 ~ N(0, sigma^2 I) over item j's
features; pi ~ Dir(d0); Z_i | pi ~ Cat(pi); y_ij | Z_i, beta_j ~ Bernoulli(sig(beta_j . delta_j(Z_i))),
missing responses dropped.

Mean-field q(Z, beta, pi, sigma^2) = prod_i q(Z_i) prod_j q(beta_j) q(pi) q(sigma^2)
(``inference.dcm.bbvi_family``: its densities, scores, draws and start), fitted with the
score-function gradient estimator of Ranganath et al. (2014), optionally with control variates
(``inference.dcm.bbvi_gradients``), in the seed's coordinate ascent over the four blocks Z, beta,
pi, sigma^2 (``inference.dcm.bbvi_schedule``; :func:`block_optimizer` builds it from the settings).
The loop is the project's training driver (``inference.execution.training.train``): the loss handed to it
has the value -ELBO (the Z part summed exactly over the profiles, the rest by the M samples, for
a quieter convergence check) and the gradient -(score-function estimate).
:func:`gradient_variance` measures each block's estimator variance with and without control
variates.
``inference.dcm.bbvi_psis.log_ratios`` gives the log importance ratios log p(y, Z, beta, pi, sigma^2)
- log q(...) of joint draws of the fitted q (profiles drawn), the input of the fit's PSIS k-hat
(``inference.variational.psis``). The settings are :class:`~bayesirt.inference.dcm.bbvi_settings.BBVISettings`.

Minibatches of persons (``TrainSettings.batch_size``) scale the person sums by N / B
(stochastic VI); q(Z_i) of persons outside the batch is left as it is.

Monotonicity (``BBVISettings.monotone``, the option collapsed VI and EM share): the coefficients
are ``beta_j = models.lcdm.monotone_beta(u_j)`` (main effects softplus(u) >= 0, a two-attribute
item's interaction >= -min(main effects)), and q(u_j) = N(mu_j, C_j C_j^T) is the seed's Gaussian
family on the unconstrained u_j. The prior stays the seed's N(0, sigma^2 I) on beta, restricted
to the monotone cone; in u it is N(beta(u); 0, sigma^2 I) |d beta / d u|. (The restriction's
normalising constant is the cone's Gaussian mass, which does not depend on sigma^2, so it
changes no gradient and is left out of the ELBO, shifting it by a constant.) The estimator is the
same score-function estimator, now of the ELBO in u: beta's weight gains the item's
log-Jacobian and its scores are those of q(u_j), so it stays unbiased
(``tests/unit/test_bbvi.py`` checks it against a pathwise reference). Reported coefficients
are the means and sds of beta(u) under q (Monte Carlo), all main effects >= 0.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayesirt.inference.dcm.bbvi_family import chol_factor, init_params
from bayesirt.inference.dcm.bbvi_gradients import gradients, make_loss
from bayesirt.inference.dcm.bbvi_schedule import BLOCKS, PARAM_BLOCK, coordinate_ascent
from bayesirt.inference.dcm.bbvi_settings import BBVISettings
from bayesirt.inference.execution import training
from bayesirt.models import lcdm


def block_optimizer(settings: BBVISettings, train: training.TrainSettings) -> optax.GradientTransformation:
    """Adam per block, cycled by ``coordinate_ascent`` on the blocks' schedule.

    Each block's learning rate decays as the training driver's schedule does.

    Parameters
    ----------
    settings : BBVISettings
        Learning rates and steps per block.
    train : training.TrainSettings
        Decay rate, decay steps and floor of the learning rates.

    Returns
    -------
    optax.GradientTransformation
        The block-cycling optimiser.
    """
    txs = []
    for lr in settings.learning_rates:
        if train.lr_decay_rate >= 1.0:
            sched = optax.constant_schedule(lr)
        else:
            sched = optax.exponential_decay(
                lr, train.lr_decay_steps, train.lr_decay_rate, end_value=min(train.min_learning_rate, lr)
            )
        txs.append(optax.adam(sched))
    return coordinate_ascent(txs, tuple(settings.steps_per_block))


class Problem(NamedTuple):
    """One LCDM data set as every DCM fit takes it (``prepare``).

    The responses and the Q-matrix's design, i.e. the data and the model's structure together.

    Attributes
    ----------
    data : dict
        The training driver's data dict.
    design : lcdm.Design
        The Q-matrix's design.
    n_persons : int
        N.
    """

    data: dict  # the training driver's data dict
    design: lcdm.Design
    n_persons: int


def prepare(y, q, allow_zero_rows: bool = False) -> Problem:
    """Check responses (N, J; 0/1, missing -1) and the Q-matrix and build the driver's data.

    Parameters
    ----------
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    q : array (J, A)
        The Q-matrix: 0/1, items x attributes.
    allow_zero_rows : bool
        Whether items that measure no attribute are allowed.

    Returns
    -------
    Problem
        Data, design and N.

    Raises
    ------
    ValueError
        If the responses or the Q-matrix are malformed or do not fit together.
    """
    y = lcdm.check_responses(y)
    q = lcdm.check_q_matrix(q, y.shape[1], allow_zero_rows=allow_zero_rows)
    lcdm.check_size(y.shape[0], q.shape[1])
    des = lcdm.design(q)
    y_obs, n_obs = lcdm.observed_counts(y)
    data = {
        "y_obs": y_obs,
        "n_obs": n_obs,
        training.SHARED: {
            "delta": jnp.asarray(des.delta, jnp.float32),
            "feature_mask": jnp.asarray(des.feature_mask, jnp.float32),
            "order": jnp.asarray(des.order, jnp.int32),
        },
    }
    return Problem(data, des, y.shape[0])


def problem(
    key, problem: Problem, settings: BBVISettings = BBVISettings(), *, init: dict | None = None, label: str = "bbvi"
) -> training.Problem:
    """BBVI's fit of one data set, ready for the training driver.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split in two, the second half is the training driver's.
    problem : Problem
        The data and the model's structure together: responses and the Q-matrix's design, as
        ``prepare(y, q)`` builds them (the DCM fits take no separate structure argument).
    settings : BBVISettings
        Samples per step, control variates, block schedule and learning rates, start, priors,
        monotonicity, and the training driver's settings (``train``).
    init : dict, optional
        Starting variational parameters (``bbvi_family.init_params`` by default).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit for the training driver (``training.train_problem``) or, with the fits of other
        data sets of the same shape, the bulk driver (``bulk.train_block``). Its result's
        ``params`` are the variational parameters (``summarize`` turns them into estimates).
    """
    _, fit_key = jax.random.split(key)
    params = init_params(problem.n_persons, problem.design, settings) if init is None else init
    loss, optimizer = make_loss(settings, problem.n_persons), block_optimizer(settings, settings.train)
    return training.Problem(loss, params, fit_key, problem.data, problem.n_persons, settings.train, optimizer, label)


_problem = problem  # for ``fit``, whose argument ``problem`` hides the function


def fit(
    key, problem: Problem, settings: BBVISettings = BBVISettings(), *, init: dict | None = None, label: str = "bbvi"
) -> training.FitResult:
    """Run BBVI through the training driver: ``training.train_problem`` of ``problem``'s fit (the
    arguments are ``problem``'s); a diverged fit keeps its last good state, unconverged
    (``training.keep_last_good``).

    Parameters
    ----------
    key : jax.Array
        PRNG key; split in two, the second half is the training driver's.
    problem : Problem
        The data and the model's structure together, as ``prepare(y, q)`` builds them.
    settings : BBVISettings
        Samples per step, control variates, block schedule and learning rates, start, priors,
        monotonicity, and the training driver's settings (``train``).
    init : dict, optional
        Starting variational parameters (``bbvi_family.init_params`` by default).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.FitResult
        ``params`` are the variational parameters (``summarize`` turns them into estimates);
        losses, steps, convergence and timings as the driver reports them.
    """
    return training.keep_last_good(training.train_problem, _problem(key, problem, settings, init=init, label=label))


@partial(jax.jit, static_argnames=("settings", "n_persons"))
def _repeated_gradients(params, keys, batch, settings: BBVISettings, n_persons: int):
    """Both gradient estimates (plain, control variates) for each key of ``keys`` (chunks, 8, 2);
    compiled once per settings and data shape in a process (a block's replications share it)."""
    return jax.lax.map(jax.vmap(lambda k: gradients(params, k, batch, settings, n_persons, "both")[1]), keys)


def gradient_variance(key, params, problem: Problem, settings: BBVISettings, n_repeats: int = 64) -> dict:
    """Variance of each block's gradient estimate, without and with control variates.

    Over ``n_repeats`` independent draws of M samples (same draws for both), summed over the
    block's components.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    params : dict
        Variational parameters.
    problem : Problem
        The data set.
    settings : BBVISettings
        Samples per estimate and priors.
    n_repeats : int
        Independent estimates per block.

    Returns
    -------
    dict
        {block: {"plain", "control_variates", "reduction"}}.
    """
    batch = dict(problem.data, index=jnp.arange(problem.n_persons))
    # one program over the repeats, run in chunks of 8 (bounded memory on large data)
    keys = (
        jax.random.split(key, n_repeats).reshape(-1, 1, 2)
        if n_repeats < 8
        else jax.random.split(key, (n_repeats // 8) * 8).reshape(-1, 8, 2)
    )
    plain, cv = _repeated_gradients(params, keys, batch, settings, problem.n_persons)
    plain, cv = (jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), t) for t in (plain, cv))
    out = {}
    for b, name in enumerate(BLOCKS):
        names = [p for p, blk in PARAM_BLOCK.items() if blk == b]
        vp = float(sum(jnp.sum(jnp.var(plain[p], 0)) for p in names))
        vc = float(sum(jnp.sum(jnp.var(cv[p], 0)) for p in names))
        out[name] = {"plain": vp, "control_variates": vc, "reduction": vp / vc if vc > 0 else float("nan")}
    return out


class Summary(NamedTuple):
    """Means and sds of the variational posterior q (``summarize``).

    Attributes
    ----------
    profile_prob : numpy.ndarray (N, L)
        q(Z_i).
    beta_mean : numpy.ndarray (J, K)
        Means of the coefficients.
    beta_sd : numpy.ndarray (J, K)
        Their sds.
    pi_mean : numpy.ndarray (L,)
        Means of the profile probabilities.
    pi_sd : numpy.ndarray (L,)
        Their sds.
    sigma2_mean : float
        Mean of sigma^2.
    """

    profile_prob: np.ndarray  # (N, L) q(Z_i)
    beta_mean: np.ndarray  # (J, K)
    beta_sd: np.ndarray  # (J, K)
    pi_mean: np.ndarray  # (L,)
    pi_sd: np.ndarray  # (L,)
    sigma2_mean: float


def monotone_moments(key, mu, c, design: lcdm.Design, n_draws: int = 2000):
    """(mean, sd) of ``models.lcdm.monotone_beta(u)`` under q(u) = N(mu, C C^T), by Monte Carlo.

    The monotone coefficients' summary in BBVI and collapsed VI.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    mu : array (J, K)
        Means of q(u).
    c : array (J, K, K)
        Cholesky factors of q(u)'s covariances.
    design : lcdm.Design
        The Q-matrix's design.
    n_draws : int
        Monte Carlo draws.

    Returns
    -------
    tuple of jax.Array
        Mean (J, K) and sd (J, K) of the coefficients.
    """
    fm = jnp.asarray(design.feature_mask)
    eps = jax.random.normal(key, (n_draws,) + mu.shape)
    u = mu + jnp.einsum("jkl,sjl->sjk", c, eps)
    draws = lcdm.monotone_beta(u, jnp.asarray(design.order))[0] * fm
    return draws.mean(0), draws.std(0)


def summarize(params, design: lcdm.Design, key=None, monotone: bool = False, n_draws: int = 2000) -> Summary:
    """Means and sds of q; with ``monotone``, of the coefficients beta(u) under q(u).

    Parameters
    ----------
    params : dict
        A fit's variational parameters.
    design : lcdm.Design
        The Q-matrix's design.
    key : jax.Array, optional
        PRNG key of the Monte Carlo summary (needed with ``monotone``).
    monotone : bool
        Whether the fit was monotone.
    n_draws : int
        Monte Carlo draws.

    Returns
    -------
    Summary
        Profile probabilities and the parameters' means and sds.

    Raises
    ------
    ValueError
        If ``monotone`` and no ``key`` is given.
    """
    fm = jnp.asarray(design.feature_mask)
    c = chol_factor(params["chol_off"], params["log_diag"], fm)
    beta_mean, beta_sd = params["mu"], jnp.sqrt(jnp.einsum("jkl,jkl->jk", c, c)) * fm
    if monotone:
        if key is None:
            raise ValueError("bbvi.summarize: monotone coefficients are summarised by Monte Carlo; pass key")
        beta_mean, beta_sd = monotone_moments(key, params["mu"], c, design, n_draws)
    d = jnp.exp(params["log_d"])
    d0 = d.sum()
    a, b = np.exp(np.asarray(params["log_ab"]))
    return Summary(
        np.asarray(jax.nn.softmax(params["rho"])),
        np.asarray(beta_mean),
        np.asarray(beta_sd),
        np.asarray(d / d0),
        np.asarray(jnp.sqrt(d * (d0 - d) / (d0**2 * (d0 + 1)))),
        float(b / (a - 1)) if a > 1 else float("inf"),
    )
