"""Black-box variational inference for the LCDM, as seed 002 derives it.

Model (``models.lcdm``): sigma^2 ~ IG(a0, b0); beta_j | sigma^2 ~ N(0, sigma^2 I) over item j's
features; pi ~ Dir(d0); Z_i | pi ~ Cat(pi); y_ij | Z_i, beta_j ~ Bernoulli(sig(beta_j . delta_j(Z_i))),
missing responses dropped.

Mean-field q(Z, beta, pi, sigma^2) = prod_i q(Z_i) prod_j q(beta_j) q(pi) q(sigma^2):
  q(Z_i) = Cat(softmax(rho_i));  q(beta_j) = N(mu_j, C_j C_j^T), C_j lower triangular;
  q(pi) = Dir(exp(log_d));  q(sigma^2) = IG(exp(log_a), exp(log_b)).
One departure from the seed's parameterisation: the diagonal of C_j is stored as its logarithm,
so that the covariance stays positive definite whatever step the optimiser takes (the seed
updates C_j's entries directly). The score of log q with respect to these parameters is taken by
automatic differentiation; it equals the seed's closed forms (vech/duplication-matrix algebra
for C_j, digamma terms for the Dirichlet and inverse gamma) by the chain rule.

Gradient (Ranganath et al. 2014, eq. 5, as in the seed): for each factor's parameters lambda_k,
  grad_k L ~ 1/M sum_m grad log q(x_km | lambda_k) (log p_k(y, x_(k)m) - log q(x_km | lambda_k)),
where p_k collects the terms of the joint that contain x_k (its Markov blanket), with samples
from q. Concretely, with M joint samples (Z_m, beta_m, pi_m, sigma^2_m):
  Z_i:      sum_j log p(y_ij | Z_im, beta_jm) + log pi_m[Z_im]                 - log q(Z_im)
  beta_j:   sum_i log p(y_ij | Z_im, beta_jm) + log N(beta_jm; 0, sigma^2_m I) - log q(beta_jm)
  pi:       sum_i log pi_m[Z_im] + log Dir(pi_m; d0)                           - log q(pi_m)
  sigma^2:  sum_j log N(beta_jm; 0, sigma^2_m I) + log IG(sigma^2_m; a0, b0)   - log q(sigma^2_m)
(the seed drops constants of these terms; a constant changes no expectation, only variance).
All of it is vectorised over persons, items and samples (the sums over i are matrix products of
one-hot profiles with the response indicators).

Control variates (Ranganath et al. 2014, section 3.2), optional: with h = grad log q and
f = h * w per sample, the estimate is mean(f - a h), a = Cov(f, h) / Var(h) per component,
estimated from the other M - 1 samples (leave-one-out, which keeps the estimate unbiased). ``gradient_variance`` measures each block's
estimator variance with and without them.

Schedule (the seed's coordinate ascent): sweeps over the four blocks Z, beta, pi, sigma^2 with
``steps_per_block`` gradient steps on each in turn (the seed: 10, 20, 20, 30). Each block has
its own Adam (optax), which moves only while its block is active (``coordinate_ascent``); the
seed used plain gradient steps with hand-set step sizes. The loop is the project's training
driver (``inference.training.train``): the loss handed to it has the value -ELBO (the Z part
summed exactly over the profiles, the rest by the M samples, for a quieter convergence check)
and the gradient -(score-function estimate).

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

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.scipy.linalg import solve_triangular
from jax.scipy.special import digamma

from bayesirt.inference import training
from bayesirt.models import lcdm

BLOCKS = ("z", "beta", "pi", "sigma2")
PARAM_BLOCK = {"rho": 0, "mu": 1, "chol_off": 1, "log_diag": 1, "log_d": 2, "log_ab": 3}


class BBVISettings(NamedTuple):
    n_samples: int = 50  # M
    control_variates: bool = False
    steps_per_block: tuple = (10, 20, 20, 30)  # Z, beta, pi, sigma^2 per sweep (the seed's schedule)
    learning_rates: tuple = (0.2, 0.05, 0.05, 0.05)  # Adam, per block
    init_scale: float = 0.2  # initial sd of q(beta_j) per feature
    priors: lcdm.Priors = lcdm.Priors()
    monotone: bool = False  # q on the unconstrained u of models.lcdm.monotone_beta


class CAState(NamedTuple):
    count: jnp.ndarray
    inner: tuple


def _active_block(count, steps_per_block):
    period = sum(steps_per_block)
    bounds = jnp.cumsum(jnp.asarray(steps_per_block))
    return jnp.searchsorted(bounds, count % period, side="right")


def coordinate_ascent(transforms, steps_per_block) -> optax.GradientTransformation:
    """An optax transformation that cycles over the blocks of ``PARAM_BLOCK``: block b is updated
    by ``transforms[b]`` for ``steps_per_block[b]`` steps, the others stand still (their
    optimiser state included, so Adam's moments and step counts are per block)."""

    def split(tree, b):
        return {k: v for k, v in tree.items() if PARAM_BLOCK[k] == b}

    def init(params):
        return CAState(jnp.zeros([], jnp.int32), tuple(tx.init(split(params, b)) for b, tx in enumerate(transforms)))

    def update(grads, state, params=None):
        active = _active_block(state.count, steps_per_block)
        updates, inner = {}, []
        for b, tx in enumerate(transforms):  # four blocks: a static unrolled loop
            u, s = tx.update(split(grads, b), state.inner[b], split(params, b))
            on = active == b
            inner.append(jax.tree.map(lambda new, old: jnp.where(on, new, old), s, state.inner[b]))
            updates.update(jax.tree.map(lambda x: jnp.where(on, x, jnp.zeros_like(x)), u))
        return updates, CAState(state.count + 1, tuple(inner))

    return optax.GradientTransformation(init, update)


def block_optimizer(settings: BBVISettings, train: training.TrainSettings) -> optax.GradientTransformation:
    txs = []
    for lr in settings.learning_rates:
        if train.lr_decay_rate >= 1.0:
            sched = optax.constant_schedule(lr)
        else:
            sched = optax.exponential_decay(lr, train.lr_decay_steps, train.lr_decay_rate,
                                            end_value=min(train.min_learning_rate, lr))
        txs.append(optax.adam(sched))
    return coordinate_ascent(txs, tuple(settings.steps_per_block))


# ---------------------------------------------------------------------------------------------
# the variational family


def chol_factor(chol_off, log_diag, feature_mask):
    """(J, K, K) lower-triangular C_j; padded rows/columns are the identity."""
    k = feature_mask.shape[-1]
    both = feature_mask[..., :, None] * feature_mask[..., None, :]
    strict = jnp.tril(chol_off, -1) * both
    diag = jnp.exp(log_diag) * feature_mask + (1 - feature_mask)
    return strict + diag[..., None] * jnp.eye(k)


def log_q_beta(mu, chol_off, log_diag, beta, feature_mask):
    """log N(beta; mu, C C^T) over the real features of one item (all arguments for one item)."""
    c = chol_factor(chol_off, log_diag, feature_mask)
    eps = solve_triangular(c, beta - mu, lower=True)
    k = feature_mask.sum()
    return -0.5 * jnp.sum(feature_mask * eps ** 2) - jnp.sum(feature_mask * log_diag) - 0.5 * k * jnp.log(2 * jnp.pi)


def score_beta(params, beta, feature_mask):
    """d log q(beta_mj) / d (mu_j, chol_off_j, log_diag_j) for samples beta (M, J, K).

    With r = beta - mu, eps = C^-1 r and u = C^-T eps = V^-1 r: d/dmu = u;
    d/dC = C^-T (eps eps^T - I), whose lower triangle is u eps^T below the diagonal and
    u_k eps_k - 1/c_kk on it (C^-T is upper triangular with diagonal 1/c_kk); for the
    log-diagonal, c_kk (u_k eps_k - 1/c_kk) = c_kk u_k eps_k - 1."""
    c = chol_factor(params["chol_off"], params["log_diag"], feature_mask)  # (J, K, K)
    r = beta - params["mu"]
    eps = jax.vmap(lambda rm: solve_triangular(c, rm[..., None], lower=True)[..., 0])(r)
    u = jax.vmap(lambda em: solve_triangular(c, em[..., None], lower=True, trans="T")[..., 0])(eps)
    both = feature_mask[:, :, None] * feature_mask[:, None, :]
    h_mu = u * feature_mask
    h_off = jnp.tril(u[..., :, None] * eps[..., None, :], -1) * both
    diag = jnp.diagonal(c, axis1=-2, axis2=-1)
    h_ld = (diag * u * eps - 1.0) * feature_mask
    return h_mu, h_off, h_ld


def log_q_pi(log_d, log_pi):
    return lcdm.log_dirichlet(log_pi, jnp.exp(log_d))


def log_q_sigma2(log_ab, sigma2):
    return lcdm.log_inv_gamma(sigma2, jnp.exp(log_ab[0]), jnp.exp(log_ab[1]))


def init_params(n_persons: int, design: lcdm.Design, settings: BBVISettings) -> dict:
    """q(Z) uniform; q(beta) at the monotone start (intercept -1, main effects 2 shared among
    the measured attributes, interactions 0) with sd ``init_scale`` (with ``monotone``, q(u) at
    the u of that start); q(pi) = Dir(d0 + N/L); q(sigma^2) with mean 1."""
    j, n_prof, k = design.delta.shape
    n_main = (design.order == 1).sum(1, keepdims=True)
    mu = np.where(design.order == 0, -1.0, np.where(design.order == 1, 2.0 / np.maximum(n_main, 1), 0.0))
    if settings.monotone:
        mu = lcdm.monotone_u(mu, design.order)
    k_total = design.feature_mask.sum()
    a = settings.priors.a0 + k_total / 2
    return {
        "rho": jnp.zeros((n_persons, n_prof), jnp.float32),
        "mu": jnp.asarray(mu * design.feature_mask, jnp.float32),
        "chol_off": jnp.zeros((j, k, k), jnp.float32),
        "log_diag": jnp.full((j, k), np.log(settings.init_scale), jnp.float32),
        "log_d": jnp.full((n_prof,), np.log(settings.priors.d0 + n_persons / n_prof), jnp.float32),
        "log_ab": jnp.asarray([np.log(a), np.log(a - 1)], jnp.float32),
    }


# ---------------------------------------------------------------------------------------------
# the estimator


def _estimate(h, w, control_variates: bool):
    """Score-function estimate from per-sample scores h (M, ...) and weights w (M, ...) that
    broadcast against h.

    With control variates: mean_m (f_m - a_(-m) h_m), f = h w, where the coefficient
    a = sum f h / sum h^2 (Ranganath et al.'s Cov(f, h) / Var(h), uncentred because E[h] = 0)
    is computed leaving sample m out, so that it is independent of sample m and the estimate
    stays unbiased (a from all M samples biases it by O(1/M), measurably at M = 20)."""
    f = h * w
    if not control_variates:
        return f.mean(0)
    fh, hh = f * h, h * h
    s_fh, s_hh = fh.sum(0) - fh, hh.sum(0) - hh
    # a component whose score barely varies over the other samples (e.g. a q(Z_i) that is
    # almost certain) gives no usable a; it keeps the plain term
    ok = s_hh > 1e-6 * (h.shape[0] - 1)
    a = jnp.where(ok, s_fh / jnp.where(ok, s_hh, 1.0), 0.0)
    return jnp.mean(f - a * h, 0)


N_PROPOSALS = 8


def log_gamma_from(alpha, x, u, u_boost):
    """log of Gamma(alpha, 1) draws from standard normals ``x`` and uniforms ``u`` (both
    (N_PROPOSALS, *shape)) and uniforms ``u_boost`` (shape); alpha broadcasts against shape.

    Written by hand because ``jax.random.gamma``/``loggamma`` take seconds each to compile on
    CPU (a rejection while-loop per call site), which dominated a whole BBVI fit. This is
    Marsaglia & Tsang's method with a fixed number of proposals, the first accepted one kept
    (acceptance is above 0.95 per proposal for alpha >= 1, so all 8 fail with probability
    below 1e-10; then the mode d is returned), and the boost
    Gamma(alpha) = Gamma(alpha + 1) U^(1/alpha) for alpha < 1, in log space."""
    alpha = jnp.broadcast_to(alpha, u_boost.shape)
    boost = alpha < 1
    a = jnp.where(boost, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    v = (1 + c * x) ** 3
    log_v = jnp.log(jnp.where(v > 0, v, 1.0))
    accept = (v > 0) & (jnp.log(u) < 0.5 * x ** 2 + d - d * v + d * log_v)
    first = jnp.argmax(accept, 0)
    log_v_first = jnp.where(accept.any(0), jnp.take_along_axis(log_v, first[None], 0)[0], 0.0)
    return jnp.log(d) + log_v_first + jnp.where(boost, jnp.log(u_boost) / alpha, 0.0)


def categorical_from(logits, u):
    """Draws from Cat(softmax(logits)) (B, L) by inverting the cumulative probabilities with
    uniforms ``u`` (M, B) (``jax.random.categorical`` would use L Gumbels per draw)."""
    cdf = jnp.cumsum(jax.nn.softmax(logits), -1)
    return jnp.minimum(jnp.sum(u[..., None] * cdf[:, -1:] > cdf, -1), logits.shape[-1] - 1)


def draw(params, key, n_samples: int, rho, feature_mask):
    """M joint samples from q: Z (M, B), beta (M, J, K), log pi (M, L), sigma^2 (M,).

    All normals come from one ``jax.random.normal`` call and all uniforms from one
    ``jax.random.uniform`` call (each random call site costs ~0.5 s of compilation on CPU)."""
    m, (j, k), n_prof, n_b, p = n_samples, params["mu"].shape, params["log_d"].shape[0], rho.shape[0], N_PROPOSALS
    sizes_n = [m * j * k, p * m, p * m * n_prof]
    sizes_u = [p * m, p * m * n_prof, m, m * n_prof, m * n_b]
    kn, ku = jax.random.split(key)
    normals = jnp.split(jax.random.normal(kn, (sum(sizes_n),)), np.cumsum(sizes_n)[:-1])
    uniforms = jnp.split(jax.random.uniform(ku, (sum(sizes_u),), minval=1e-12), np.cumsum(sizes_u)[:-1])
    eps = normals[0].reshape(m, j, k)
    c = chol_factor(params["chol_off"], params["log_diag"], feature_mask)
    beta = params["mu"] + jnp.einsum("jkl,mjl->mjk", c, eps) * feature_mask
    a, b = jnp.exp(params["log_ab"][0]), jnp.exp(params["log_ab"][1])
    sigma2 = b * jnp.exp(-log_gamma_from(a, normals[1].reshape(p, m), uniforms[0].reshape(p, m), uniforms[2]))
    lg = log_gamma_from(jnp.exp(params["log_d"]), normals[2].reshape(p, m, n_prof),
                        uniforms[1].reshape(p, m, n_prof), uniforms[3].reshape(m, n_prof))
    log_pi = lg - jax.nn.logsumexp(lg, -1, keepdims=True)
    z = categorical_from(rho, uniforms[4].reshape(m, n_b))
    return z, beta, log_pi, sigma2


def gradients(params, key, batch, settings: BBVISettings, n_persons: int, control_variates):
    """(ELBO estimate, gradient estimates of every parameter) for one batch of persons;
    ``control_variates="both"`` gives the pair (plain, with control variates) of estimates."""
    pr = settings.priors
    delta, fmask = batch[training.SHARED]["delta"], batch[training.SHARED]["feature_mask"]
    y_obs, n_obs, index = batch["y_obs"], batch["n_obs"], batch["index"]
    scale = n_persons / y_obs.shape[0]
    rho = params["rho"][index]
    m = settings.n_samples
    z, beta, log_pi, sigma2 = draw(params, key, m, rho, fmask)
    q_draw = beta  # the draws of q's coordinates (u under monotonicity, else beta itself)
    if settings.monotone:
        order = batch[training.SHARED]["order"]
        beta = lcdm.monotone_beta(q_draw, order)[0] * fmask
        log_jac = lcdm.monotone_item_log_jac(q_draw, order)  # (M, J)
    else:
        log_jac = jnp.zeros(beta.shape[:2])

    ll = lcdm.profile_loglik(beta, delta, y_obs, n_obs)  # (M, B, L)
    log_qz = jax.nn.log_softmax(rho)  # (B, L)
    onehot = jax.nn.one_hot(z, rho.shape[-1])  # (M, B, L)
    lnorm = lcdm.log_normal_beta(beta, sigma2, fmask)  # (M, J)
    lq_beta = jax.vmap(jax.vmap(log_q_beta, (0, 0, 0, 0, 0)), (None, None, None, 0, None))(
        params["mu"], params["chol_off"], params["log_diag"], q_draw, fmask)  # (M, J)
    lq_pi = jax.vmap(log_q_pi, (None, 0))(params["log_d"], log_pi)  # (M,)
    lq_s2 = jax.vmap(log_q_sigma2, (None, 0))(params["log_ab"], sigma2)  # (M,)
    l_dir = lcdm.log_dirichlet(log_pi, pr.d0)  # (M,)
    l_ig = lcdm.log_inv_gamma(sigma2, pr.a0, pr.b0)  # (M,)

    # weights: each factor's Markov-blanket log-joint minus its log q, per sample
    w_z = jnp.sum(onehot * (ll + log_pi[:, None, :] - log_qz), -1)  # (M, B)
    n1 = jnp.einsum("mbl,bj->mjl", onehot, y_obs) * scale
    n0 = jnp.einsum("mbl,bj->mjl", onehot, n_obs) * scale
    eta = lcdm.item_logits(beta, delta)  # (M, J, L)
    lik_j = jnp.sum(n1 * jax.nn.log_sigmoid(eta) + n0 * jax.nn.log_sigmoid(-eta), -1)  # (M, J)
    w_beta = lik_j + lnorm + log_jac - lq_beta
    w_pi = jnp.sum(onehot.sum(1) * scale * log_pi, -1) + l_dir - lq_pi
    w_s2 = lnorm.sum(-1) + l_ig - lq_s2
    w_z, w_beta, w_pi, w_s2 = jax.lax.stop_gradient((w_z, w_beta, w_pi, w_s2))

    # per-sample scores, in closed form (the seed's formulas, for our parameterisation)
    h_z = onehot - jax.nn.softmax(rho)  # (M, B, L)
    h_mu, h_off, h_ld = score_beta(params, q_draw, fmask)
    d = jnp.exp(params["log_d"])
    h_d = d * (digamma(d.sum()) - digamma(d) + log_pi)  # (M, L)
    a, b = jnp.exp(params["log_ab"][0]), jnp.exp(params["log_ab"][1])
    h_ab = jnp.stack([a * (jnp.log(b) - digamma(a) - jnp.log(sigma2)), a - b / sigma2], -1)  # (M, 2)

    def estimates(cv):
        return {
            "rho": jnp.zeros_like(params["rho"]).at[index].set(_estimate(h_z, w_z[..., None], cv)),
            "mu": _estimate(h_mu, w_beta[..., None], cv),
            "chol_off": _estimate(h_off, w_beta[..., None, None], cv),
            "log_diag": _estimate(h_ld, w_beta[..., None], cv),
            "log_d": _estimate(h_d, w_pi[:, None], cv),
            "log_ab": _estimate(h_ab, w_s2[:, None], cv),
        }

    # "both": (plain, with control variates) from the same samples, for gradient_variance
    grads = (estimates(False), estimates(True)) if control_variates == "both" else estimates(bool(control_variates))
    # ELBO: the Z part exactly over profiles (given each sample of beta and pi), the rest sampled
    qz = jnp.exp(log_qz)
    elbo_z = scale * jnp.sum(qz * (ll + log_pi[:, None, :] - log_qz), (-2, -1))  # (M,)
    elbo = jnp.mean(elbo_z + lnorm.sum(-1) + log_jac.sum(-1) + l_dir + l_ig - lq_beta.sum(-1) - lq_pi - lq_s2)
    return jax.lax.stop_gradient(elbo), jax.lax.stop_gradient(grads)


def make_loss(settings: BBVISettings, n_persons: int):
    """Loss for the training driver: value -ELBO, gradient -(score-function estimate)."""

    def loss(params, key, batch):
        elbo, grads = gradients(params, key, batch, settings, n_persons, settings.control_variates)
        linear = sum(jnp.sum(g * p) for g, p in zip(jax.tree.leaves(grads), jax.tree.leaves(params)))
        return -elbo - (linear - jax.lax.stop_gradient(linear))

    return loss


class Problem(NamedTuple):
    data: dict  # the training driver's data dict
    design: lcdm.Design
    n_persons: int


def prepare(y, q, allow_zero_rows: bool = False) -> Problem:
    """Check responses (N, J; 0/1, missing -1) and the Q-matrix and build the driver's data."""
    y = lcdm.check_responses(y)
    q = lcdm.check_q_matrix(q, y.shape[1], allow_zero_rows=allow_zero_rows)
    lcdm.check_size(y.shape[0], q.shape[1])
    des = lcdm.design(q)
    y_obs, n_obs = lcdm.observed_counts(y)
    data = {"y_obs": y_obs, "n_obs": n_obs,
            training.SHARED: {"delta": jnp.asarray(des.delta, jnp.float32),
                              "feature_mask": jnp.asarray(des.feature_mask, jnp.float32),
                              "order": jnp.asarray(des.order, jnp.int32)}}
    return Problem(data, des, y.shape[0])


def fit_bbvi(key, problem: Problem, settings: BBVISettings = BBVISettings(),
             train: training.TrainSettings = training.TrainSettings(), params=None,
             label: str = "bbvi") -> training.FitResult:
    """Run BBVI through the training driver (a diverged fit keeps its last good state)."""
    init_key, fit_key = jax.random.split(key)
    params = init_params(problem.n_persons, problem.design, settings) if params is None else params
    return training.keep_last_good(training.train, make_loss(settings, problem.n_persons), params, fit_key,
                                   problem.data, problem.n_persons, train, label,
                                   optimizer=block_optimizer(settings, train))


def gradient_variance(key, params, problem: Problem, settings: BBVISettings, n_repeats: int = 64) -> dict:
    """Variance of each block's gradient estimate over ``n_repeats`` independent draws of M
    samples, without and with control variates (same draws for both), summed over the block's
    components. Returns {block: {"plain", "control_variates", "reduction"}}."""
    batch = dict(problem.data, index=jnp.arange(problem.n_persons))

    def both(k):
        return gradients(params, k, batch, settings, problem.n_persons, "both")[1]

    # one program over the repeats, run in chunks of 8 (bounded memory on large data)
    keys = jax.random.split(key, n_repeats).reshape(-1, 1, 2) if n_repeats < 8 else \
        jax.random.split(key, (n_repeats // 8) * 8).reshape(-1, 8, 2)
    plain, cv = jax.jit(lambda ks: jax.lax.map(jax.vmap(both), ks))(keys)
    plain, cv = (jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:]), t) for t in (plain, cv))
    out = {}
    for b, name in enumerate(BLOCKS):
        names = [p for p, blk in PARAM_BLOCK.items() if blk == b]
        vp = float(sum(jnp.sum(jnp.var(plain[p], 0)) for p in names))
        vc = float(sum(jnp.sum(jnp.var(cv[p], 0)) for p in names))
        out[name] = {"plain": vp, "control_variates": vc, "reduction": vp / vc if vc > 0 else float("nan")}
    return out


class Summary(NamedTuple):
    profile_prob: np.ndarray  # (N, L) q(Z_i)
    beta_mean: np.ndarray  # (J, K)
    beta_sd: np.ndarray  # (J, K)
    pi_mean: np.ndarray  # (L,)
    pi_sd: np.ndarray  # (L,)
    sigma2_mean: float


def monotone_moments(key, mu, c, design: lcdm.Design, n_draws: int = 2000):
    """(mean, sd) of ``models.lcdm.monotone_beta(u)`` under q(u) = N(mu, C C^T), by Monte Carlo
    (the monotone coefficients' summary in BBVI and collapsed VI)."""
    fm = jnp.asarray(design.feature_mask)
    eps = jax.random.normal(key, (n_draws,) + mu.shape)
    u = mu + jnp.einsum("jkl,sjl->sjk", c, eps)
    draws = lcdm.monotone_beta(u, jnp.asarray(design.order))[0] * fm
    return draws.mean(0), draws.std(0)


def summarize(params, design: lcdm.Design, key=None, monotone: bool = False, n_draws: int = 2000) -> Summary:
    """Means and sds of q; with ``monotone``, of the coefficients beta(u) under q(u) (Monte
    Carlo with ``key``)."""
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
    return Summary(np.asarray(jax.nn.softmax(params["rho"])), np.asarray(beta_mean),
                   np.asarray(beta_sd), np.asarray(d / d0),
                   np.asarray(jnp.sqrt(d * (d0 - d) / (d0 ** 2 * (d0 + 1)))),
                   float(b / (a - 1)) if a > 1 else float("inf"))
