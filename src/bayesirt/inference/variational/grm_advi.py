"""The factorized GRM of seed 000 (or its discrimination-weighted mixture extension, section
1.3) fitted by mean-field ADVI, on arrays.

``fit(key, y, structure, GRMADVISettings(...))`` takes responses ``y`` (N, I; -1 missing) and
the model's structure (``models.factorized_grm.Structure``, or ``models.mixture_grm.Structure``
for the mixture), starts the surrogate at the data-driven values of the model module, fits it
with ``inference.variational.advi`` and returns the training result, the fitted surrogate, draws of every
parameter from it and the final ELBO (``GRMADVIFit``). The likelihood may be replaced
(``log_likelihood``, with its arrays in ``extra_data``): the imputation objectives of
``inference.variational.objectives`` do. ``studies.grm_advi`` wraps this fit for a ``ResponseMatrix`` with
tables and a record.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.training import FitResult, Problem, TrainSettings, keep_last_good, train_problem
from bayesirt.inference.variational import advi
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import mixture_grm


@dataclass(frozen=True)
class GRMADVISettings:
    """Settings of :func:`fit`.

    Attributes
    ----------
    priors : factorized_grm.Priors
        The model's priors.
    n_draws : int
        Draws of the surrogate per step.
    posterior_draws : int
        Draws returned from the fitted surrogate.
    elbo_draws : int
        Draws of the final ELBO's estimate.
    khat_draws : int
        Draws of the log importance ratios behind the PSIS k-hat.
    init_scale : float
        The surrogate's starting sd.
    train : TrainSettings
        The training driver's settings.
    """

    priors: fgrm.Priors = field(default_factory=fgrm.Priors)
    n_draws: int = 1
    posterior_draws: int = 500
    elbo_draws: int = 32
    khat_draws: int = 200
    init_scale: float = 0.1
    train: TrainSettings = field(default_factory=TrainSettings)


class GRMADVIFit(NamedTuple):
    """Result of :func:`fit`.

    Attributes
    ----------
    training : training.FitResult
        The training driver's result (params: the fitted surrogate).
    q : dict
        The fitted surrogate, ``{"loc", "raw_scale"}`` on the unconstrained scale.
    draws : dict
        Parameter name -> (posterior_draws, ...) draws on the constrained scale.
    elbo : float
        ELBO of the whole data set at the fitted surrogate (higher is better).
    log_ratios : np.ndarray
        (khat_draws,) log p(y, z) - log q(z) of draws from the surrogate (``inference.variational.psis``).
    """

    training: FitResult  # the training driver's result (params: the fitted surrogate)
    q: dict  # the fitted surrogate, {"loc", "raw_scale"} on the unconstrained scale
    draws: dict  # parameter name -> (posterior_draws, ...) draws on the constrained scale
    elbo: float  # ELBO of the whole data set at the fitted surrogate (higher is better)
    log_ratios: np.ndarray  # (khat_draws,) log p(y, z) - log q(z), z ~ q: PSIS's input


def model_module(st):
    """The model module of a structure: ``mixture_grm`` (seed 000, 1.3) or ``factorized_grm``.

    Parameters
    ----------
    st : factorized_grm.Structure or mixture_grm.Structure
        The structure.

    Returns
    -------
    module
        ``models.mixture_grm`` or ``models.factorized_grm``.
    """
    return mixture_grm if isinstance(st, mixture_grm.Structure) else fgrm


def advi_model(st, priors: fgrm.Priors, n_persons: int, log_likelihood: Callable | None = None) -> advi.Model:
    """The model as an ADVI model.

    ``log_likelihood(params, batch, key)`` may be replaced (the imputation objectives do), by
    default the complete-case likelihood.

    Parameters
    ----------
    st : factorized_grm.Structure or mixture_grm.Structure
        The structure.
    priors : factorized_grm.Priors
        The model's priors.
    n_persons : int
        N, the number of persons.
    log_likelihood : callable, optional
        ``(params, batch, key) -> (B,)`` replacing the complete-case likelihood.

    Returns
    -------
    advi.Model
        Shapes, bijectors, local parameters and log-densities.
    """
    m = model_module(st)

    def complete_case(params, batch, key):
        return m.log_likelihood(params, batch["y"], st)

    return advi.Model(
        shapes=m.parameter_shapes(st, n_persons),
        bijectors=m.bijectors(),
        local=m.LOCAL,
        log_prior_global=lambda p: m.log_prior(p, priors, st, local=False),
        log_prior_local=lambda p: m.log_prior(p, priors, st, local=True),
        log_likelihood=log_likelihood or complete_case,
    )


def problem(
    key,
    y,
    structure,
    settings: GRMADVISettings = GRMADVISettings(),
    *,
    init: dict | None = None,
    log_likelihood: Callable | None = None,
    extra_data: dict | None = None,
    label: str = "factorized_grm",
) -> Problem:
    """The mean-field ADVI fit of the factorized (or mixture) GRM, ready for the training driver.

    Parameters are those of :func:`fit`; ``key`` is the fit's whole key (the problem trains
    with its first third, :func:`evaluate` draws with the others).

    Parameters
    ----------
    key : jax.Array
        The fit's whole PRNG key; split in three: the fit, the posterior draws, the final ELBO.
    y : array (N, I)
        Integer responses 0..K_i-1, -1 for missing.
    structure : factorized_grm.Structure or mixture_grm.Structure
        Scales, categories per item (and mixture dimensions): ``structure_of`` of the model module.
    settings : GRMADVISettings
        Priors, draws per step, starting sd, training settings.
    init : dict, optional
        Starting values of the parameters on their constrained scale (``initial_values`` of
        the model module by default, from ``y``).
    log_likelihood : callable, optional
        ``(params, batch, key) -> (B,)`` replacing the complete-case likelihood.
    extra_data : dict, optional
        Arrays the replacement likelihood reads from its batch (persons on the leading axis,
        or under ``training.SHARED``).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    training.Problem
        The fit for the training driver (``training.train_problem``) or, with others of its
        kind (one structure, likelihood and settings; data of one shape), the bulk driver
        (``bulk.train_block``); :func:`evaluate` turns its result into a ``GRMADVIFit``.
    """
    y = np.asarray(y)
    model = advi_model(structure, settings.priors, y.shape[0], log_likelihood)
    key_fit = jax.random.split(key, 3)[0]
    initial = model_module(structure).initial_values(y, structure) if init is None else init
    data = {"y": jnp.asarray(y, jnp.int32), **(extra_data or {})}
    advi_settings = advi.ADVISettings(n_draws=settings.n_draws, init_scale=settings.init_scale, train=settings.train)
    return advi.problem(
        key_fit, data, model, advi_settings, init=advi.init(model, initial, settings.init_scale), label=label
    )


def evaluate(
    key,
    fitted: Problem,
    result: FitResult,
    structure,
    settings: GRMADVISettings = GRMADVISettings(),
    *,
    log_likelihood: Callable | None = None,
) -> GRMADVIFit:
    """The fitted surrogate of ``fitted`` (a :func:`problem` of ``key``, ``structure``,
    ``settings`` and ``log_likelihood``): its draws and final ELBO on the problem's data
    (``evaluator``'s programs, built for this one fit).

    Parameters
    ----------
    key : jax.Array
        The fit's whole PRNG key (:func:`problem`'s).
    fitted : training.Problem
        The fit, as :func:`problem` built it.
    result : training.FitResult
        Its training result.
    structure : factorized_grm.Structure or mixture_grm.Structure
        The model's structure.
    settings : GRMADVISettings
        Priors, posterior and ELBO draws.
    log_likelihood : callable, optional
        The replaced likelihood of the fit.

    Returns
    -------
    GRMADVIFit
        ``result``, the surrogate, ``posterior_draws`` draws of every parameter and the ELBO.
    """
    return evaluator(structure, settings, fitted.n_persons, log_likelihood)(key, fitted.data, result)


def evaluator(structure, settings: GRMADVISettings, n_persons: int, log_likelihood: Callable | None = None):
    """``evaluate(key, data, result) -> GRMADVIFit`` for the fits of one model (``structure``,
    ``settings``, ``log_likelihood``, N persons): the final ELBO and the posterior draws, as
    :func:`fit` computes them, by programs compiled once for all fits whose data have one
    shape (e.g. the fits of a block, ``inference.execution.bulk``).

    Parameters
    ----------
    structure : factorized_grm.Structure or mixture_grm.Structure
        The model's structure.
    settings : GRMADVISettings
        Priors, posterior and ELBO draws.
    n_persons : int
        N.
    log_likelihood : callable, optional
        The replaced likelihood of the fits.

    Returns
    -------
    callable
        ``evaluate(key, data, result)``: ``key`` the fit's whole key (:func:`problem`'s),
        ``data`` the driver's data of the fit, ``result`` its training result.
    """
    model = advi_model(structure, settings.priors, n_persons, log_likelihood)
    elbo_loss = jax.jit(advi.negative_elbo(model, n_persons, settings.elbo_draws))
    draw = advi.draws_program(model, settings.posterior_draws)
    ratios = advi.log_ratios_program(model, n_persons, settings.khat_draws)

    def evaluate_fit(key, data: dict, result: FitResult) -> GRMADVIFit:
        _, key_draws, key_elbo = jax.random.split(key, 3)
        q = result.params
        elbo = float(-elbo_loss(q, key_elbo, dict(data, index=jnp.arange(n_persons))) * n_persons)
        samples = {name: np.asarray(v) for name, v in draw(q, key_draws).items()}
        # the ratios' key: the ELBO's, folded (the fit's three keys stay as they were)
        log_ratios = np.asarray(ratios(q, jax.random.fold_in(key_elbo, 1), data))
        return GRMADVIFit(result, q, samples, elbo, log_ratios)

    return evaluate_fit


def fit(
    key,
    y,
    structure,
    settings: GRMADVISettings = GRMADVISettings(),
    *,
    init: dict | None = None,
    log_likelihood: Callable | None = None,
    extra_data: dict | None = None,
    label: str = "factorized_grm",
) -> GRMADVIFit:
    """Mean-field ADVI fit of the factorized (or mixture) GRM: :func:`problem`, fitted by the
    training driver, then :func:`evaluate`.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split in three: the fit, the posterior draws, the final ELBO.
    y : array (N, I)
        Integer responses 0..K_i-1, -1 for missing.
    structure : factorized_grm.Structure or mixture_grm.Structure
        Scales, categories per item (and mixture dimensions): ``structure_of`` of the model module.
    settings : GRMADVISettings
        Priors, draws per step, posterior and ELBO draws, starting sd, training settings.
    init : dict, optional
        Starting values of the parameters on their constrained scale (``initial_values`` of
        the model module by default, from ``y``).
    log_likelihood : callable, optional
        ``(params, batch, key) -> (B,)`` replacing the complete-case likelihood.
    extra_data : dict, optional
        Arrays the replacement likelihood reads from its batch (persons on the leading axis,
        or under ``training.SHARED``).
    label : str
        Name of the fit in the progress log.

    Returns
    -------
    GRMADVIFit
        The training result, the fitted surrogate, ``posterior_draws`` draws of every
        parameter and the final ELBO. A fit whose loss becomes non-finite keeps its last good
        state (its training result is unconverged and says why).
    """
    fitted = problem(
        key, y, structure, settings, init=init, log_likelihood=log_likelihood, extra_data=extra_data, label=label
    )
    result = keep_last_good(train_problem, fitted)
    return evaluate(key, fitted, result, structure, settings, log_likelihood=log_likelihood)


def final_elbo(model: advi.Model, q, key, data, n_persons: int, n_draws: int = 32) -> float:
    """ELBO of the whole data set at the fitted surrogate (higher is better).

    Parameters
    ----------
    model : advi.Model
        The model.
    q : dict
        The fitted surrogate.
    key : jax.Array
        PRNG key of the estimate.
    data : dict
        The driver's data (persons on the leading axis).
    n_persons : int
        N.
    n_draws : int
        Draws of the estimate.

    Returns
    -------
    float
        The ELBO of all N persons.
    """
    loss = advi.negative_elbo(model, n_persons, n_draws)
    batch = dict(data, index=jnp.arange(n_persons))
    return float(-jax.jit(loss)(q, key, batch) * n_persons)
