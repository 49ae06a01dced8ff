"""Gibbs sampler for seed 001's two-component Gaussian mixture with known precision.

    x_i | z_i, mu ~ N(mu_{z_i}, 1/lambda),  z_i ~ Bernoulli(pi),
    mu_k ~ N(nu, 1/rho) (k = 0, 1),         pi ~ Beta(alpha, beta),

with pi the probability of component 1. Latent allocations z make every full conditional
standard (seed 001):

    z_i | .  ~ Bernoulli(w_i1 / (w_i0 + w_i1)),  w_ik = pi_k N(x_i | mu_k, 1/lambda)
               (pi_1 = pi, pi_0 = 1 - pi; computed as a logistic of the log-odds)
    pi | z   ~ Beta(alpha + n_1, beta + n_0)
    mu_k | . ~ N(M_k, 1/L_k),  L_k = rho + n_k lambda,  M_k = (rho nu + lambda sum_{z_i=k} x_i) / L_k

All n allocations are drawn at once (vectorized).

Label switching. The likelihood is unchanged by swapping the labels (mu_0 <-> mu_1,
pi <-> 1 - pi, z <-> 1 - z), so the posterior has two mirror-image modes and a long chain, or
chains started differently, visit both. We impose the ordering mu_0 < mu_1 by relabelling:
after every sweep, a state with mu_0 > mu_1 is replaced by its mirror image. Because the
mirror map is a symmetry of the posterior when the prior is exchangeable (alpha = beta, the
default), the relabelled chain samples exactly the posterior restricted to mu_0 < mu_1 (and
so every chain reports the same labelling, which R-hat needs). With alpha != beta the prior
is not exchangeable and the relabelled chain samples the posterior under the symmetrized
prior; :func:`kernel` warns in that case.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import asdict, dataclass
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class MixturePriors:
    """Known precision ``lam`` of both components; mu_k ~ N(nu, 1/rho); pi ~ Beta(alpha, beta).

    Attributes
    ----------
    lam : float
        Precision of both components (known).
    nu : float
        Prior mean of the component means.
    rho : float
        Prior precision of the component means.
    alpha, beta : float
        Beta prior of pi.

    Raises
    ------
    ValueError
        If a prior is not a finite number, or one other than ``nu`` is not positive.
    """

    lam: float = 1.0
    nu: float = 0.0
    rho: float = 0.01
    alpha: float = 1.0
    beta: float = 1.0

    def __post_init__(self):
        for key, value in asdict(self).items():
            if not isinstance(value, (int, float, np.floating, np.integer)) or not math.isfinite(value):
                raise ValueError(f"mixture prior '{key}' must be a finite number, got {value!r}")
            if key != "nu" and value <= 0:
                raise ValueError(f"mixture prior '{key}' must be positive, got {value!r}")


class MixtureState(NamedTuple):
    """One chain's state of the mixture sampler.

    Attributes
    ----------
    z : jax.Array (n,)
        Allocations, 0/1 (int32).
    pi : jax.Array ()
        Probability of component 1.
    mu : jax.Array (2,)
        Component means, mu[0] < mu[1] after relabelling.
    """

    z: jnp.ndarray  # (n,) allocations, 0/1 (int32)
    pi: jnp.ndarray  # () probability of component 1
    mu: jnp.ndarray  # (2,) component means, mu[0] < mu[1] after relabelling


def check_data(x, where: str = "mixture data") -> np.ndarray:
    """Check the observations: a finite vector of at least 2 numbers.

    Parameters
    ----------
    x : array (n,)
        The observations.
    where : str
        Names the data in messages.

    Returns
    -------
    numpy.ndarray
        ``x`` as float64, shape (n,).

    Raises
    ------
    ValueError
        If ``x`` is not a vector of at least 2 observations or has non-finite values.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size < 2:
        raise ValueError(f"{where}: expected a vector of at least 2 observations, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(
            f"{where}: {int((~np.isfinite(x)).sum())} non-finite value(s), first at index "
            f"{int(np.flatnonzero(~np.isfinite(x))[0])}"
        )
    return x


def init(key, x, priors: MixturePriors | None = None) -> MixtureState:
    """Start: means at two random points of the data, sorted; pi = 1/2; allocations by the nearer mean.

    The first sweep redraws the allocations.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    x : array (n,)
        The observations.
    priors : MixturePriors, optional
        The priors (default ``MixturePriors()``).

    Returns
    -------
    MixtureState
        The starting state.
    """
    x = jnp.asarray(x, jnp.float32)
    idx = jax.random.choice(key, x.shape[0], (2,), replace=False)
    mu = jnp.sort(x[idx])
    z = (jnp.abs(x - mu[1]) < jnp.abs(x - mu[0])).astype(jnp.int32)
    return MixtureState(z, jnp.float32(0.5), mu)


def allocation_logit(x, pi, mu, lam):
    """log(w_i1 / w_i0): the log-odds that x_i belongs to component 1.

    Parameters
    ----------
    x : array (n,)
        The observations.
    pi : array ()
        Probability of component 1.
    mu : array (2,)
        Component means.
    lam : float
        Precision of the components.

    Returns
    -------
    jax.Array
        Log-odds, shape (n,).
    """
    return jnp.log(pi) - jnp.log1p(-pi) - 0.5 * lam * ((x - mu[1]) ** 2 - (x - mu[0]) ** 2)


def relabel(state: MixtureState) -> MixtureState:
    """The mirror image when mu_0 > mu_1: swap the means, flip z and pi.

    Parameters
    ----------
    state : MixtureState
        A state.

    Returns
    -------
    MixtureState
        The state with mu_0 <= mu_1.
    """
    swap = state.mu[0] > state.mu[1]
    return MixtureState(
        jnp.where(swap, 1 - state.z, state.z),
        jnp.where(swap, 1.0 - state.pi, state.pi),
        jnp.where(swap, state.mu[::-1], state.mu),
    )


def step(key, state: MixtureState, x, priors: MixturePriors | None = None) -> MixtureState:
    """One sweep: allocations, then pi, then both means; then the ordering mu_0 < mu_1.

    Parameters
    ----------
    key : jax.Array
        PRNG key of the sweep.
    state : MixtureState
        The current state.
    x : array (n,)
        The observations.
    priors : MixturePriors, optional
        The priors (default ``MixturePriors()``).

    Returns
    -------
    MixtureState
        The next state.
    """
    p = priors or MixturePriors()
    x = jnp.asarray(x, jnp.float32)
    k_z, k_pi, k_mu = jax.random.split(key, 3)
    logit = allocation_logit(x, state.pi, state.mu, p.lam)
    z = jax.random.bernoulli(k_z, jax.nn.sigmoid(logit)).astype(jnp.int32)
    n1 = jnp.sum(z)
    n0 = x.shape[0] - n1
    pi = jax.random.beta(k_pi, p.alpha + n1, p.beta + n0)
    # keep pi strictly inside (0, 1) so that log(pi), log(1 - pi) stay finite in the next sweep
    eps = jnp.finfo(jnp.float32).eps
    pi = jnp.clip(pi, eps, 1.0 - eps)
    s1 = jnp.sum(jnp.where(z == 1, x, 0.0))
    s0 = jnp.sum(x) - s1
    n = jnp.stack([n0, n1]).astype(jnp.float32)
    prec = p.rho + n * p.lam
    mean = (p.rho * p.nu + p.lam * jnp.stack([s0, s1])) / prec
    mu = mean + jax.random.normal(k_mu, (2,)) / jnp.sqrt(prec)
    return relabel(MixtureState(z, pi, mu))


def record(state: MixtureState) -> dict:
    """What is kept per draw: pi, the means and the size of component 1.

    Parameters
    ----------
    state : MixtureState
        A state.

    Returns
    -------
    dict
        ``pi`` (), ``mu`` (2,), ``n1`` ().
    """
    return {"pi": state.pi, "mu": state.mu, "n1": jnp.sum(state.z)}


def conditional_mu(x, z, priors: MixturePriors):
    """Closed-form mean and variance of (mu_0, mu_1) given allocations (numpy; for tests).

    Parameters
    ----------
    x : array (n,)
        The observations.
    z : array (n,)
        Allocations 0/1.
    priors : MixturePriors
        The priors.

    Returns
    -------
    tuple of numpy.ndarray
        Means (2,) and variances (2,).
    """
    x, z = np.asarray(x, np.float64), np.asarray(z)
    n = np.array([(z == 0).sum(), (z == 1).sum()], dtype=np.float64)
    s = np.array([x[z == 0].sum(), x[z == 1].sum()])
    prec = priors.rho + n * priors.lam
    return (priors.rho * priors.nu + priors.lam * s) / prec, 1.0 / prec


class MixtureKernel(NamedTuple):
    """What the sampling driver takes (as ``gibbs.Kernel``, data closed over).

    Attributes
    ----------
    init_fn : callable
        key -> MixtureState.
    step_fn : callable
        (key, state) -> MixtureState.
    record_fn : callable
        state -> dict.
    coords : dict
        Coordinates of the draws.
    dims : dict
        Recorded name -> its axes' names.
    """

    init_fn: object
    step_fn: object
    record_fn: object
    coords: dict
    dims: dict


def kernel(x, priors: MixturePriors | None = None, where: str = "mixture data") -> MixtureKernel:
    """Validated closures for :func:`bayesirt.inference.samplers.sampling.sample`.

    Parameters
    ----------
    x : array (n,)
        The observations.
    priors : MixturePriors, optional
        The priors (default ``MixturePriors()``).
    where : str
        Names the data in messages.

    Returns
    -------
    MixtureKernel
        The functions, coordinates and dims.

    Raises
    ------
    ValueError
        If the data are not a finite vector of at least 2 observations.
    """
    priors = priors or MixturePriors()
    x = check_data(x, where)
    if priors.alpha != priors.beta:
        warnings.warn(
            f"mixture prior alpha={priors.alpha} != beta={priors.beta}: relabelling to "
            f"mu_0 < mu_1 then samples the posterior under the symmetrized Beta prior",
            stacklevel=2,
        )
    x_dev = jnp.asarray(x, jnp.float32)
    return MixtureKernel(
        init_fn=functools.partial(init, x=x_dev, priors=priors),
        step_fn=functools.partial(step, x=x_dev, priors=priors),
        record_fn=record,
        coords={"component": [0, 1]},
        dims={"mu": ["component"]},
    )
