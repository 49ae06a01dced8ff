"""The data-augmentation Gibbs sampler for the two-parameter normal ogive model (seed 001,
Albert 1992) as a kernel of the Markov-chain driver (``inference.samplers.sampling``), and its ``fit``.

The sweep itself (the full conditionals, the two treatments of missing responses, the moves along
the model's symmetries) is :func:`bayesirt.inference.samplers.gibbs_sweep.step`. This module checks the
data (:func:`kernel`), builds the chains' data and dispersed starting states (:func:`make_data`,
:func:`init_from`), says what is kept per draw (:func:`record`), and runs the chains
(:func:`fit`, settings :class:`GibbsSettings`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.chains import SamplerSettings
from bayesirt.inference.samplers.gibbs_sweep import State, step
from bayesirt.models.twopno import Priors, check_binary_responses, initial_values

MISSING_MODES = ("augment", "omit")
# Person draws are kept by default only up to this many persons (memory of the draws).
ABILITY_DRAWS_MAX_PERSONS = 100_000


# --------------------------------------------------------------------------------------------
# data, starts and records


def _check_missing(missing):
    if missing not in MISSING_MODES:
        raise ValueError(f"missing='{missing}' is not known; expected one of {list(MISSING_MODES)}")


class Data(NamedTuple):
    """What a chain needs besides its state, passed to the driver as ``data`` (an argument of
    the compiled programs, not constants folded into them)."""

    y: jnp.ndarray  # (N, J) int8: 0, 1, -1 missing
    theta0: jnp.ndarray  # (N,) data-driven starting values (before jitter)
    a0: jnp.ndarray  # (J,)
    d0: jnp.ndarray  # (J,)


def make_data(y) -> Data:
    """:class:`Data` from a (validated) numpy response matrix.

    Parameters
    ----------
    y : array (N, J)
        Binary responses 0/1, -1 for missing.

    Returns
    -------
    Data
        The responses as int8 and the data-driven start of
        :func:`bayesirt.models.twopno.initial_values`.
    """
    y = np.asarray(y)
    start = initial_values(y)
    return Data(
        jnp.asarray(y, jnp.int8),
        jnp.asarray(start["ability"]),
        jnp.asarray(start["discrimination"]),
        jnp.asarray(start["difficulty"]),
    )


def init_from(key, data: Data, jitter: float = 0.5) -> State:
    """A dispersed starting state for one chain: the data-driven start of
    :func:`bayesirt.models.twopno.initial_values` with noise (sd ``jitter`` on abilities and
    difficulties, discriminations times exp(N(0, jitter/2))), so that chains start apart and
    R-hat can see a chain that has not mixed. Z starts at 0; the first sweep draws it.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    data : Data
        The responses and the data-driven start.
    jitter : float
        Sd of the noise.

    Returns
    -------
    State
        Z (N, J) zeros, theta (N,), a (J,), d (J,).
    """
    k_t, k_a, k_d = jax.random.split(key, 3)
    theta = data.theta0 + jitter * jax.random.normal(k_t, data.theta0.shape)
    a = data.a0 * jnp.exp(0.5 * jitter * jax.random.normal(k_a, data.a0.shape))
    d = data.d0 + jitter * jax.random.normal(k_d, data.d0.shape)
    return State(jnp.zeros(data.y.shape, jnp.float32), theta, a, d)


def init(key, y, priors: Priors | None = None, missing: str = "augment", jitter: float = 0.5) -> State:
    """:func:`init_from` on a numpy response matrix (convenience for one chain).

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    priors : twopno.Priors, optional
        Not used by the start.
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.
    jitter : float
        Sd of the noise.

    Returns
    -------
    State
        A starting state.

    Raises
    ------
    ValueError
        If ``missing`` is not one of ``MISSING_MODES``.
    """
    _check_missing(missing)
    return init_from(key, make_data(y), jitter)


def record(state: State, abilities: bool = False) -> dict:
    """What is kept per draw: item parameters, and abilities when asked.

    Parameters
    ----------
    state : State
        The chain's state.
    abilities : bool
        Whether to keep the abilities.

    Returns
    -------
    dict
        ``discrimination`` (J,), ``difficulty`` (J,) and, with ``abilities``, ``ability`` (N,).
    """
    out = {"discrimination": state.a, "difficulty": state.d}
    if abilities:
        out["ability"] = state.theta
    return out


def _step_on_data(key, state, data: Data, priors: Priors, missing: str, expand: bool):
    return step(key, state, data.y, priors, missing, expand)


class Kernel(NamedTuple):
    """What the sampling driver takes: ``sample(key, k.init_fn, k.step_fn, k.record_fn,
    settings, coords=k.coords, dims=k.dims, data=k.data)``."""

    init_fn: Callable  # (key, data) -> State
    step_fn: Callable  # (key, state, data) -> State
    record_fn: Callable  # state -> dict
    coords: dict
    dims: dict
    data: Data


def kernel(
    y,
    priors: Priors | None = None,
    missing: str = "augment",
    abilities: bool | None = None,
    item_names=None,
    jitter: float = 0.5,
    where: str = "responses",
    expand: bool = True,
) -> Kernel:
    """Validate the data (see :func:`bayesirt.models.twopno.check_binary_responses`: stops on
    non-binary codes; warns about constant or empty items and about persons with no response,
    who are kept and get prior draws) and build the driver's functions.

    ``abilities=None`` records ability draws only up to ``ABILITY_DRAWS_MAX_PERSONS`` persons.

    Parameters
    ----------
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    priors : twopno.Priors, optional
        The model's priors (``Priors()`` by default).
    missing : str
        Treatment of missing responses, one of ``MISSING_MODES``.
    abilities : bool, optional
        Whether ability draws are kept.
    item_names : list of str, optional
        Item coordinates of the draws (default ``item0``, ``item1`` ...).
    jitter : float
        Sd of the chains' starting noise (:func:`init_from`).
    where : str
        Name of the data in error and warning messages.
    expand : bool
        Whether each sweep makes the moves along the model's symmetries.

    Returns
    -------
    Kernel
        The chain functions, the draws' coordinates and dimensions, and the chains' data.

    Raises
    ------
    ValueError
        If ``missing`` is not known or the responses are not binary.
    """
    _check_missing(missing)
    priors = priors or Priors()
    y_np = check_binary_responses(y, item_names, where=where)
    n, j = y_np.shape
    if abilities is None:
        abilities = n <= ABILITY_DRAWS_MAX_PERSONS
    names = list(item_names) if item_names is not None else [f"item{k}" for k in range(j)]
    coords = {"item": names}
    dims = {"discrimination": ["item"], "difficulty": ["item"]}
    if abilities:
        coords["person"] = np.arange(n)
        dims["ability"] = ["person"]
    return Kernel(
        init_fn=functools.partial(init_from, jitter=jitter),
        step_fn=functools.partial(_step_on_data, priors=priors, missing=missing, expand=expand),
        record_fn=functools.partial(record, abilities=bool(abilities)),
        coords=coords,
        dims=dims,
        data=make_data(y_np),
    )


@dataclass(frozen=True)
class GibbsSettings:
    """Settings of :func:`fit`: the Markov-chain driver's ``sampler`` settings (chains, warm-up,
    draws ...), the treatment of ``missing`` responses (``MISSING_MODES``), whether ability
    draws are kept (``abilities``; None: up to ``ABILITY_DRAWS_MAX_PERSONS`` persons), the moves
    along the model's symmetries (``expand``) and the chains' starting ``jitter``."""

    sampler: SamplerSettings = field(default_factory=SamplerSettings)
    missing: str = "augment"
    abilities: bool | None = None
    expand: bool = True
    jitter: float = 0.5

    def __post_init__(self):
        _check_missing(self.missing)


def fit(
    key,
    y,
    priors: Priors | None = None,
    settings: GibbsSettings = GibbsSettings(),
    *,
    init: State | None = None,
    item_names=None,
    label: str = "gibbs_2pno",
):
    """Sample the 2PNO posterior with the data-augmentation Gibbs sampler.

    Validates the data, builds the kernel (:func:`kernel`) and runs it through the
    Markov-chain driver (:func:`bayesirt.inference.samplers.sampling.sample`).

    Parameters
    ----------
    key : jax.Array
        PRNG key of the driver (chains' starts and sweeps).
    y : array (N, J)
        Binary responses 0/1, -1 for missing.
    priors : twopno.Priors, optional
        The model's priors: its structure beyond ``y``'s shape (defaults: ``Priors()``).
    settings : GibbsSettings
        Sampler settings, missing-data treatment, ability draws, symmetry moves, start jitter.
    init : State, optional
        One starting state for every chain (by default each chain starts from the data-driven
        start with noise ``settings.jitter``, :func:`init_from`).
    item_names : list of str, optional
        Item coordinates of the draws (default ``item0``, ``item1`` ...).
    label : str
        Name of the run in the progress log.

    Returns
    -------
    sampling.SampleResult
        Draws (ArviZ InferenceData), summary table, convergence and timings.
    """
    # here, not at the top: the driver imports pandas (for its summaries, slow to import), which
    # the chain worker processes, which import this module for the kernel's functions, never need
    from bayesirt.inference.samplers.sampling import sample

    k = kernel(y, priors, settings.missing, settings.abilities, item_names, settings.jitter, expand=settings.expand)
    init_fn = k.init_fn if init is None else functools.partial(_fixed_start, state=init)
    return sample(
        key, init_fn, k.step_fn, k.record_fn, settings.sampler, coords=k.coords, dims=k.dims, label=label, data=k.data
    )


def _fixed_start(key, data: Data, state: State) -> State:
    """The same starting state for every chain (``fit(..., init=state)``)."""
    return state
