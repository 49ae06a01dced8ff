"""Longer checks of the sampling driver and the NUTS runner against closed-form posteriors.

The conjugate normal model of tests/unit/test_sampling.py: y_gi ~ N(mu_g, sigma^2) with sigma
known and mu_g ~ N(m0, s0^2). Tolerances are 4 ArviZ Monte Carlo standard errors.
"""

from typing import NamedTuple

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

from bayesirt.inference.samplers.nuts import run_nuts
from bayesirt.inference.samplers.posterior_summary import convergence
from bayesirt.inference.samplers.sampling import SamplerSettings, sample

M0, S0, SIGMA = 0.0, 3.0, 2.0
Y = np.random.default_rng(0).normal([[1.0, -2.0]], SIGMA, size=(20, 2)).astype(np.float32)
POST_PREC = 1 / S0**2 + Y.shape[0] / SIGMA**2
POST_MEAN = (M0 / S0**2 + Y.sum(0) / SIGMA**2) / POST_PREC
POST_SD = 1 / np.sqrt(POST_PREC)


def log_post(mu):
    return jnp.sum(-0.5 * ((mu - M0) / S0) ** 2) + jnp.sum(-0.5 * ((Y - mu) / SIGMA) ** 2)


class RWState(NamedTuple):
    mu: jax.Array
    logp: jax.Array


def rw_step(key, state, scale=1.7):
    prop_key, acc_key = jax.random.split(key)
    proposal = state.mu + scale * POST_SD * jax.random.normal(prop_key, (2,))
    logp = log_post(proposal)
    accept = jnp.log(jax.random.uniform(acc_key)) < logp - state.logp
    return RWState(jnp.where(accept, proposal, state.mu), jnp.where(accept, logp, state.logp))


def far_init(key):
    mu = 50.0 * jax.random.normal(key, (2,))
    return RWState(mu, log_post(mu))


def _check_moments(result, name="mu"):
    mcse_sd = az.mcse(result.idata, var_names=[name], method="sd")[name].values
    summary = result.summary
    assert np.all(np.abs(summary["mean"].to_numpy() - POST_MEAN) < 4 * summary["mcse_mean"].to_numpy())
    assert np.all(np.abs(summary["sd"].to_numpy() - POST_SD) < 4 * mcse_sd)


def test_r_hat_flags_chains_that_have_not_mixed():
    """Without burn-in, slow random-walk chains started far apart: R-hat must say so."""
    settings = SamplerSettings(n_chains=4, n_warmup=0, n_samples=200, chunk=200, progress_every=0)
    result = sample(
        jax.random.key(10), far_init, lambda k, s: rw_step(k, s, scale=0.05), lambda s: {"mu": s.mu}, settings
    )
    assert convergence(result.summary)["max_r_hat"] > 1.1


def test_thinned_random_walk_long_run():
    settings = SamplerSettings(n_chains=8, n_warmup=2000, n_samples=20000, thin=5, chunk=5000, progress_every=0)
    result = sample(jax.random.key(11), far_init, rw_step, lambda s: {"mu": s.mu}, settings)
    assert result.idata.posterior["mu"].shape == (8, 4000, 2)
    _check_moments(result)
    conv = convergence(result.summary)
    assert conv["max_r_hat"] < 1.01 and conv["min_ess_bulk"] > 4000


def test_nuts_with_data_as_argument():
    """log_density(params, data) through run_nuts(data=...): the path for real response matrices."""

    def log_density(p, y):
        mu = p["mu"]
        return jnp.sum(-0.5 * ((mu - M0) / S0) ** 2) + jnp.sum(-0.5 * ((y - mu) / SIGMA) ** 2)

    settings = SamplerSettings(n_chains=4, n_warmup=300, n_samples=1500, progress_every=0)
    result = run_nuts(jax.random.key(13), log_density, {"mu": jnp.zeros(2)}, settings, data=jnp.asarray(Y))
    assert not result.diverged
    assert result.idata.posterior["mu"].shape == (4, 1500, 2)
    assert result.idata.sample_stats["diverging"].shape == (4, 1500)
    _check_moments(result)


@pytest.mark.slow
def test_nuts_with_numpyro_model():
    def model(y):
        mu = numpyro.sample("mu", dist.Normal(jnp.full(2, M0), S0).to_event(1))
        numpyro.sample("y", dist.Normal(mu, SIGMA).to_event(1), obs=y)

    settings = SamplerSettings(n_chains=4, n_warmup=500, n_samples=2000, thin=2, progress_every=0)
    result = run_nuts(
        jax.random.key(12),
        None,
        None,
        settings,
        model=model,
        model_args=(jnp.asarray(Y),),
        coords={"group": ["a", "b"]},
        dims={"mu": ["group"]},
    )
    assert not result.diverged and result.extra["n_divergent"] == 0
    assert result.idata.posterior["mu"].shape == (4, 1000, 2)
    _check_moments(result)
    assert convergence(result.summary)["max_r_hat"] < 1.01
