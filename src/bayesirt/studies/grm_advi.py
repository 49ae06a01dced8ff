"""The factorized GRM of seed 000 (or its discrimination-weighted mixture extension, section
1.3) fitted by mean-field ADVI: a response matrix in, a ``records.FitOutput`` out.

Used by the rb_imputation study for every fit (the complete-data reference and each imputation
objective, which replaces the likelihood), and directly on your own arrays.
"""

from __future__ import annotations

import logging
from dataclasses import asdict

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from bayesirt import io, records, tables
from bayesirt.inference import advi
from bayesirt.inference.training import TrainSettings, keep_last_good
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import mixture_grm

log = logging.getLogger("bayesirt")

ITEM_PARAMETERS = ("discrimination", "base_difficulty", "increments")


def model_module(st):
    """The model module of a structure: ``mixture_grm`` (seed 000, 1.3) or ``factorized_grm``."""
    return mixture_grm if isinstance(st, mixture_grm.Structure) else fgrm


def structure(rm: io.ResponseMatrix, n_dimensions: int = 1):
    """The factorized GRM's structure, or the D-dimensional mixture's when ``n_dimensions`` > 1."""
    return fgrm.structure_of(rm) if n_dimensions == 1 else mixture_grm.structure_of(rm, n_dimensions)


def advi_model(st, priors: fgrm.Priors, n_persons: int, log_likelihood=None) -> advi.Model:
    """The model as an ADVI model; ``log_likelihood(params, batch, key)`` may be replaced (the
    imputation objectives do), by default the complete-case likelihood."""
    m = model_module(st)

    def complete_case(params, batch, key):
        return m.log_likelihood(params, batch["y"], st)

    return advi.Model(
        shapes=m.parameter_shapes(st, n_persons), bijectors=m.bijectors(), local=m.LOCAL,
        log_prior_global=lambda p: m.log_prior(p, priors, st, local=False),
        log_prior_local=lambda p: m.log_prior(p, priors, st, local=True),
        log_likelihood=log_likelihood or complete_case)


def fit(rm: io.ResponseMatrix, *, seed: int, settings: TrainSettings = TrainSettings(),
        priors: fgrm.Priors = fgrm.Priors(), n_draws: int = 1, posterior_draws: int = 500,
        truth: pd.DataFrame | None = None, log_likelihood=None, extra_data: dict | None = None,
        fields: dict | None = None, n_dimensions: int = 1, label: str = "factorized_grm") -> records.FitOutput:
    """Mean-field ADVI fit. ``fields`` go into the record (study, data set, condition ...);
    a fit whose loss becomes non-finite keeps its last good state and its record says so."""
    st = structure(rm, n_dimensions)
    model = advi_model(st, priors, rm.n_persons, log_likelihood)
    key_fit, key_draws, key_elbo = jax.random.split(jax.random.key(seed), 3)
    initial = fgrm.initial_values(rm) if n_dimensions == 1 else mixture_grm.initial_values(rm, n_dimensions)
    data = {"y": jnp.asarray(rm.responses, jnp.int32), **(extra_data or {})}
    result = keep_last_good(advi.fit, model, advi.init(model, initial), key_fit, data, rm.n_persons, settings,
                            n_draws, label=label)
    q = result.params

    elbo = final_elbo(model, q, key_elbo, data, rm.n_persons)
    samples = advi.draws(model, q, key_draws, posterior_draws)
    table = tables.factorized_grm_table if n_dimensions == 1 else tables.mixture_grm_table
    estimates = table({k: v.mean(0) for k, v in samples.items()}, rm.scale_index, rm.scales, "mean")
    estimates["sd"] = table({k: v.std(0) for k, v in samples.items()}, rm.scale_index, rm.scales, "sd")["sd"]
    truth_note = None
    if truth is not None and ("dimension" in estimates) != ("dimension" in truth):
        # e.g. a D-dimensional mixture fitted to data simulated from the one-dimensional model:
        # no parameter of one has a counterpart in the other
        truth_note = "not attached: the data were simulated from a model with other parameters"
        log.warning("true parameters %s", truth_note)
    elif truth is not None:
        keys = ["parameter", "item", "person", "scale", "category"] + (["dimension"] if "dimension" in estimates else [])
        estimates = tables.attach_truth(estimates, truth, keys)

    record = records.fit_record(result, {
        "model": "factorized_grm" if n_dimensions == 1 else "mixture_grm",
        "method": "advi",
        "n_dimensions": n_dimensions,
        **({"truth": truth_note} if truth_note else {}),
        **(fields or {}),
        "seed": seed,
        "n_persons": rm.n_persons,
        "n_items": rm.n_items,
        "n_scales": len(rm.scales),
        "scales": rm.scales,
        "elbo": elbo,
        "settings": asdict(settings),
        "priors": asdict(priors),
        "n_draws": n_draws,
        "posterior_draws": posterior_draws,
    }, window=settings.window)
    return records.FitOutput(record, estimates, records.loss_table(result.losses), item_inference_data(samples, rm))


def final_elbo(model: advi.Model, q, key, data, n_persons: int, n_draws: int = 32) -> float:
    """ELBO of the whole data set at the fitted surrogate (higher is better)."""
    loss = advi.negative_elbo(model, n_persons, n_draws)
    batch = dict(data, index=jnp.arange(n_persons))
    return float(-jax.jit(loss)(q, key, batch) * n_persons)


def item_inference_data(samples: dict, rm: io.ResponseMatrix):
    """ArviZ InferenceData with the item parameters' draws (one chain of independent draws)."""
    import arviz as az

    names = [it.name for it in rm.items]
    posterior = {k: samples[k][None] for k in ITEM_PARAMETERS}
    coords = {"item": names, "increment": np.arange(1, samples["increments"].shape[-1] + 1)}
    dims = {"discrimination": ["item"], "base_difficulty": ["item"], "increments": ["item", "increment"]}
    if samples["discrimination"].ndim == 3:  # the mixture model: one discrimination per dimension
        coords["dimension"] = np.arange(samples["discrimination"].shape[-1])
        dims["discrimination"] = ["item", "dimension"]
    return az.from_dict(posterior=posterior, coords=coords, dims=dims)
