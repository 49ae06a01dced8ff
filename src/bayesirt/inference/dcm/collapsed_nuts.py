"""NUTS on the collapsed LCDM: the posterior reference of the DCM study for beta and pi.

The profiles are summed out as in collapsed VI (``inference.dcm.collapsed_vi.log_density``, in the
unconstrained beta, profile logits theta and log sigma^2), and the platform's numpyro runner
(``inference.samplers.nuts.run_nuts``) samples that density.
"""

from __future__ import annotations

import jax.numpy as jnp

from bayesirt.inference.dcm.bbvi import Problem
from bayesirt.inference.dcm.collapsed_vi import init_params, log_density
from bayesirt.inference.execution import training
from bayesirt.models import lcdm


def run_collapsed_nuts(
    key,
    problem: Problem,
    sampler_settings,
    priors: lcdm.Priors = lcdm.Priors(),
    init=None,
    label: str = "nuts_collapsed",
):
    """NUTS on ``log_density`` (numpyro, through ``inference.samplers.nuts.run_nuts``).

    Draws of beta (padded coefficients are given a standard normal so the density stays proper),
    theta and log_sigma2.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    problem : Problem
        The data set.
    sampler_settings : SamplerSettings
        Chains, warm-up, samples.
    priors : lcdm.Priors
        The model's priors.
    init : dict, optional
        Starting values (defaults: the monotone start).
    label : str
        Name of the run in the log.

    Returns
    -------
    sampling.SampleResult
        The NUTS draws and their summary.
    """
    from bayesirt.inference.samplers.nuts import run_nuts  # numpyro: imported on first use

    des = problem.design
    fm = problem.data[training.SHARED]["feature_mask"]
    if init is None:
        p0 = init_params(des)
        init = {"beta": p0["mu"], "theta": p0["theta_mu"], "log_sigma2": jnp.zeros([], jnp.float32)}

    def density(p, data):
        return log_density(p, data, priors) - 0.5 * jnp.sum((1 - fm) * p["beta"] ** 2)

    return run_nuts(
        key,
        density,
        init,
        sampler_settings,
        data=problem.data,
        label=label,
        dims={"beta": ["item", "feature"], "theta": ["profile_logit"]},
    )
