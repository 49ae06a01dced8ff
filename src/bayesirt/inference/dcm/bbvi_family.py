"""The variational family of BBVI for the LCDM: densities, scores and draws of q, and its start.

Mean-field q(Z, beta, pi, sigma^2) = prod_i q(Z_i) prod_j q(beta_j) q(pi) q(sigma^2):
  q(Z_i) = Cat(softmax(rho_i));  q(beta_j) = N(mu_j, C_j C_j^T), C_j lower triangular;
  q(pi) = Dir(exp(log_d));  q(sigma^2) = IG(exp(log_a), exp(log_b)).
One departure from the seed's parameterisation: the diagonal of C_j is stored as its logarithm,
so that the covariance stays positive definite whatever step the optimiser takes (the seed
updates C_j's entries directly). The score of log q with respect to these parameters is taken by
automatic differentiation; it equals the seed's closed forms (vech/duplication-matrix algebra
for C_j, digamma terms for the Dirichlet and inverse gamma) by the chain rule.

The draws (:func:`draw`) take all their normals and uniforms from one call each, with
hand-written Gamma (:func:`log_gamma_from`) and categorical (:func:`categorical_from`) samplers:
JAX's own (``jax.random.gamma``, ``categorical``) cost seconds of compilation per call site
on CPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models import lcdm

if TYPE_CHECKING:  # for the annotation only
    from bayesirt.inference.dcm.bbvi_settings import BBVISettings


def chol_factor(chol_off, log_diag, feature_mask):
    """(J, K, K) lower-triangular C_j; padded rows/columns are the identity.

    Parameters
    ----------
    chol_off : array (J, K, K)
        Entries below the diagonal.
    log_diag : array (J, K)
        Log of the diagonal.
    feature_mask : array (J, K)
        1 for the real (unpadded) features of each item.

    Returns
    -------
    jax.Array
        C, shape (J, K, K).
    """
    k = feature_mask.shape[-1]
    both = feature_mask[..., :, None] * feature_mask[..., None, :]
    strict = jnp.tril(chol_off, -1) * both
    diag = jnp.exp(log_diag) * feature_mask + (1 - feature_mask)
    return strict + diag[..., None] * jnp.eye(k)


# Forward and back substitution written out over the (static, small) number of features K,
# not jax.scipy.linalg.solve_triangular: on CPU, a solve_triangular vmapped over samples, items
# and a block's fits becomes one batched LAPACK call that jaxlib (0.10.2) spreads over XLA's
# intra-op threads, and a block of 20 BBVI fits hung there for good (every thread waiting, no
# CPU used). An LCDM item has a handful of features, so the unrolled loop costs nothing and
# stays inside the compiled program.
def solve_lower(c, r):
    """x with C x = r, for lower-triangular C (..., K, K) and r (..., K).

    Parameters
    ----------
    c : array (..., K, K)
        Lower-triangular matrices with nonzero diagonal.
    r : array (..., K)
        Right-hand sides.

    Returns
    -------
    jax.Array
        x, shape (..., K).
    """
    xs = []
    for k in range(c.shape[-1]):
        acc = r[..., k]
        for i in range(k):
            acc = acc - c[..., k, i] * xs[i]
        xs.append(acc / c[..., k, k])
    return jnp.stack(xs, axis=-1)


def solve_lower_transposed(c, r):
    """x with C^T x = r, for lower-triangular C (..., K, K) and r (..., K).

    Parameters
    ----------
    c : array (..., K, K)
        Lower-triangular matrices with nonzero diagonal.
    r : array (..., K)
        Right-hand sides.

    Returns
    -------
    jax.Array
        x, shape (..., K).
    """
    n = c.shape[-1]
    xs = [None] * n
    for k in reversed(range(n)):
        acc = r[..., k]
        for i in range(k + 1, n):
            acc = acc - c[..., i, k] * xs[i]
        xs[k] = acc / c[..., k, k]
    return jnp.stack(xs, axis=-1)


def log_q_beta(mu, chol_off, log_diag, beta, feature_mask):
    """log N(beta; mu, C C^T) over the real features of one item (all arguments for one item).

    Parameters
    ----------
    mu : array (K,)
        Mean.
    chol_off : array (K, K)
        Entries of C below the diagonal.
    log_diag : array (K,)
        Log of C's diagonal.
    beta : array (K,)
        The point.
    feature_mask : array (K,)
        1 for the item's real features.

    Returns
    -------
    jax.Array
        The log density, a scalar.
    """
    c = chol_factor(chol_off, log_diag, feature_mask)
    eps = solve_lower(c, beta - mu)
    k = feature_mask.sum()
    return -0.5 * jnp.sum(feature_mask * eps**2) - jnp.sum(feature_mask * log_diag) - 0.5 * k * jnp.log(2 * jnp.pi)


def score_beta(params, beta, feature_mask):
    """d log q(beta_mj) / d (mu_j, chol_off_j, log_diag_j) for samples beta (M, J, K).

    With r = beta - mu, eps = C^-1 r and u = C^-T eps = V^-1 r: d/dmu = u;
    d/dC = C^-T (eps eps^T - I), whose lower triangle is u eps^T below the diagonal and
    u_k eps_k - 1/c_kk on it (C^-T is upper triangular with diagonal 1/c_kk); for the
    log-diagonal, c_kk (u_k eps_k - 1/c_kk) = c_kk u_k eps_k - 1.

    Parameters
    ----------
    params : dict
        Variational parameters (``mu``, ``chol_off``, ``log_diag``).
    beta : array (M, J, K)
        Samples.
    feature_mask : array (J, K)
        1 for the real (unpadded) features of each item.

    Returns
    -------
    tuple of jax.Array
        Scores for mu (M, J, K), chol_off (M, J, K, K) and log_diag (M, J, K).
    """
    c = chol_factor(params["chol_off"], params["log_diag"], feature_mask)  # (J, K, K)
    r = beta - params["mu"]
    eps = solve_lower(c, r)  # c (J, K, K) broadcasts over the samples of r (M, J, K)
    u = solve_lower_transposed(c, eps)
    both = feature_mask[:, :, None] * feature_mask[:, None, :]
    h_mu = u * feature_mask
    h_off = jnp.tril(u[..., :, None] * eps[..., None, :], -1) * both
    diag = jnp.diagonal(c, axis1=-2, axis2=-1)
    h_ld = (diag * u * eps - 1.0) * feature_mask
    return h_mu, h_off, h_ld


def log_q_pi(log_d, log_pi):
    """log q(pi) = log Dir(pi; exp(log_d)).

    Parameters
    ----------
    log_d : array (L,)
        Log concentrations.
    log_pi : array (..., L)
        Log profile probabilities.

    Returns
    -------
    jax.Array
        Log densities.
    """
    return lcdm.log_dirichlet(log_pi, jnp.exp(log_d))


def log_q_sigma2(log_ab, sigma2):
    """log q(sigma^2) = log IG(sigma^2; exp(log_ab)).

    Parameters
    ----------
    log_ab : array (2,)
        Log shape and log scale.
    sigma2 : array
        Points.

    Returns
    -------
    jax.Array
        Log densities.
    """
    return lcdm.log_inv_gamma(sigma2, jnp.exp(log_ab[0]), jnp.exp(log_ab[1]))


def init_params(n_persons: int, design: lcdm.Design, settings: BBVISettings) -> dict:
    """Starting variational parameters of BBVI.

    q(Z) uniform; q(beta) at the monotone start (intercept -1, main effects 2 shared among the
    measured attributes, interactions 0) with sd ``init_scale`` (with ``monotone``, q(u) at the u
    of that start); q(pi) = Dir(d0 + N/L); q(sigma^2) with mean 1.

    Parameters
    ----------
    n_persons : int
        N.
    design : lcdm.Design
        The Q-matrix's design.
    settings : BBVISettings
        Starting sd, priors, monotonicity.

    Returns
    -------
    dict
        ``rho`` (N, L), ``mu``, ``chol_off``, ``log_diag``, ``log_d``, ``log_ab``.
    """
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


N_PROPOSALS = 8


def log_gamma_from(alpha, x, u, u_boost):
    """log of Gamma(alpha, 1) draws from given normals and uniforms.

    Written by hand because ``jax.random.gamma``/``loggamma`` take seconds each to compile on
    CPU (a rejection while-loop per call site), which dominated a whole BBVI fit. This is
    Marsaglia & Tsang's method with a fixed number of proposals, the first accepted one kept
    (acceptance is above 0.95 per proposal for alpha >= 1, so all 8 fail with probability
    below 1e-10; then the mode d is returned), and the boost
    Gamma(alpha) = Gamma(alpha + 1) U^(1/alpha) for alpha < 1, in log space.

    Parameters
    ----------
    alpha : array
        Shapes; broadcasts against ``shape``.
    x : array (N_PROPOSALS, *shape)
        Standard normals.
    u : array (N_PROPOSALS, *shape)
        Uniforms.
    u_boost : array (*shape)
        Uniforms for the boost.

    Returns
    -------
    jax.Array
        Log Gamma draws, shape ``shape``.
    """
    alpha = jnp.broadcast_to(alpha, u_boost.shape)
    boost = alpha < 1
    a = jnp.where(boost, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = 1.0 / jnp.sqrt(9.0 * d)
    v = (1 + c * x) ** 3
    log_v = jnp.log(jnp.where(v > 0, v, 1.0))
    accept = (v > 0) & (jnp.log(u) < 0.5 * x**2 + d - d * v + d * log_v)
    first = jnp.argmax(accept, 0)
    log_v_first = jnp.where(accept.any(0), jnp.take_along_axis(log_v, first[None], 0)[0], 0.0)
    return jnp.log(d) + log_v_first + jnp.where(boost, jnp.log(u_boost) / alpha, 0.0)


def categorical_from(logits, u):
    """Draws from Cat(softmax(logits)) (B, L) by inverting the cumulative probabilities.

    With uniforms ``u`` (M, B) (``jax.random.categorical`` would use L Gumbels per draw).

    Parameters
    ----------
    logits : array (B, L)
        Log probabilities (unnormalised).
    u : array (M, B)
        Uniforms.

    Returns
    -------
    jax.Array
        Categories, shape (M, B).
    """
    cdf = jnp.cumsum(jax.nn.softmax(logits), -1)
    return jnp.minimum(jnp.sum(u[..., None] * cdf[:, -1:] > cdf, -1), logits.shape[-1] - 1)


def draw(params, key, n_samples: int, rho, feature_mask):
    """M joint samples from q: Z (M, B), beta (M, J, K), log pi (M, L), sigma^2 (M,).

    All normals come from one ``jax.random.normal`` call and all uniforms from one
    ``jax.random.uniform`` call: every random call site adds its own code to the compiled
    program and to its compilation time (the Performance page has the figure).

    Parameters
    ----------
    params : dict
        Variational parameters.
    key : jax.Array
        PRNG key.
    n_samples : int
        M.
    rho : array (B, L)
        Logits of q(Z) of the batch's persons.
    feature_mask : array (J, K)
        1 for the real (unpadded) features of each item.

    Returns
    -------
    tuple of jax.Array
        Z (M, B), beta (M, J, K), log pi (M, L), sigma^2 (M,).
    """
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
    lg = log_gamma_from(
        jnp.exp(params["log_d"]),
        normals[2].reshape(p, m, n_prof),
        uniforms[1].reshape(p, m, n_prof),
        uniforms[3].reshape(m, n_prof),
    )
    log_pi = lg - jax.nn.logsumexp(lg, -1, keepdims=True)
    z = categorical_from(rho, uniforms[4].reshape(m, n_b))
    return z, beta, log_pi, sigma2
