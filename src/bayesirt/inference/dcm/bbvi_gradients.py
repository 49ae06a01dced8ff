"""The score-function gradient estimator of BBVI for the LCDM, and the loss it hands the driver.

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
estimated from the other M - 1 samples (leave-one-out, which keeps the estimate unbiased).
``inference.dcm.bbvi.gradient_variance`` measures each block's estimator variance with and without
them.

Under monotonicity (``BBVISettings.monotone``) the same estimator is that of the ELBO in the
unconstrained u: beta's weight gains the item's log-Jacobian and its scores are those of
q(u_j) (see ``inference.dcm.bbvi``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
from jax.scipy.special import digamma

from bayesirt.inference.dcm.bbvi_family import draw, log_q_beta, log_q_pi, log_q_sigma2, score_beta
from bayesirt.inference.execution import training
from bayesirt.models import lcdm

if TYPE_CHECKING:  # for the annotation only
    from bayesirt.inference.dcm.bbvi_settings import BBVISettings


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


def gradients(params, key, batch, settings: BBVISettings, n_persons: int, control_variates):
    """ELBO estimate and gradient estimates of every parameter for one batch of persons.

    ``control_variates="both"`` gives the pair (plain, with control variates) of estimates.

    Parameters
    ----------
    params : dict
        Variational parameters.
    key : jax.Array
        PRNG key of the M samples.
    batch : dict
        A training batch.
    settings : BBVISettings
        Samples and priors.
    n_persons : int
        N.
    control_variates : bool or str
        Whether to use control variates, or ``"both"``.

    Returns
    -------
    tuple
        (ELBO estimate, gradients: a dict like ``params``); with ``"both"`` the gradients are
        the pair (plain, with control variates) from the same samples.
    """
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
        params["mu"], params["chol_off"], params["log_diag"], q_draw, fmask
    )  # (M, J)
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
    """Loss for the training driver: value -ELBO, gradient -(score-function estimate).

    Parameters
    ----------
    settings : BBVISettings
        Samples, control variates and priors.
    n_persons : int
        N.

    Returns
    -------
    callable
        ``loss(params, key, batch) -> scalar``.
    """

    def loss(params, key, batch):
        elbo, grads = gradients(params, key, batch, settings, n_persons, settings.control_variates)
        linear = sum(jnp.sum(g * p) for g, p in zip(jax.tree.leaves(grads), jax.tree.leaves(params)))
        return -elbo - (linear - jax.lax.stop_gradient(linear))

    return loss
