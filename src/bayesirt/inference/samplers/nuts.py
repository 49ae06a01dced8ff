"""NUTS reference runner (numpyro) for any model given as a log-density.

``run_nuts(key, log_density, init_params, settings)`` samples ``exp(log_density(params))`` with
numpyro's NUTS and returns the same :class:`~bayesirt.inference.samplers.sampling.SampleResult` as the
Markov-chain driver, so Gibbs samplers and their NUTS references are summarised, recorded and
compared by the same code. ``log_density`` takes a dict of arrays in unconstrained space (a
model maps constrained parameters itself and adds the log-Jacobians); alternatively a numpyro
model function may be passed as ``model=`` (draws then come back in constrained space).

Choices, and why:

* ``chain_method="vectorized"``: a CPU shows JAX one device, so ``"parallel"`` (pmap) would run
  the chains one after another anyway, and ``"sequential"`` (``lax.map``) runs them one after
  another by design.
  Vectorized chains are one program over a batch of chains, the same shape as the Gibbs driver
  (``vmap`` over chains), which keeps timings of the two comparable. The price: every chain
  waits for the longest trajectory of each iteration.
* Data: ``run_nuts(..., data=...)`` calls ``log_density(params, data)`` and hands ``data`` to
  the compiled loops as an argument (through a numpyro model of flat sites plus a
  ``numpyro.factor``, with ``jit_model_args=True``). A ``potential_fn`` that closes over a large
  array would have it folded into the program as a constant, which XLA can take minutes over.
* Starting points: ``init_params`` holds one chain's values; each chain starts from them plus
  uniform noise on (-init_jitter, init_jitter) (unconstrained space, as Stan's random inits), so
  that R-hat can see chains that have not forgotten where they began. ``init_jitter=0`` starts
  every chain at the same point; ``init_batched=True`` takes ``init_params`` as already having
  a leading chain axis.
* Keys: the key is split once into ``jitter`` and ``mcmc`` keys.
* Timing. numpyro compiles its warm-up and its sampling loops when it reaches them, so neither
  can be compiled ahead of time from outside. JAX reports the time span of every trace,
  lowering and backend compilation through ``jax.monitoring``; ``compile_seconds`` is the union
  of those spans during the run, and ``wall_seconds`` is the run's total time (warm-up and
  sampling) minus them, i.e. the time of the iterations and numpyro's Python around them.
  ``extra`` carries the split: ``warmup_seconds`` and ``sampling_seconds`` (each without its
  compilation) and ``warmup_compile_seconds`` / ``sampling_compile_seconds``.
* Divergent transitions are collected (``extra_fields=("diverging",)``) into ``sample_stats``
  as ``diverging`` and counted in ``reason`` and ``extra["n_divergent"]``. They do not set
  ``diverged``: that flag means, as for every sampler, that non-finite values were met (here
  in the draws); a count of divergent transitions is a warning about the geometry.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax import monitoring
from numpyro.infer import MCMC, NUTS

from bayesirt.inference.samplers.posterior_summary import summary_table
from bayesirt.inference.samplers.sampling import SampleResult, SamplerSettings, to_inference_data

log = logging.getLogger("bayesirt")

# JAX's events for the stages of turning a Python function into an executable.
_COMPILE_EVENTS = frozenset(
    {
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    }
)


class _CompileSpans:
    """Collects the time spans of JAX compilation while active (a listener registered once).

    jax.monitoring has no public way to unregister a listener, so one module-level listener is
    registered on first use and records only while a ``with`` block is open (one timed run at
    a time per process; compilations in other threads meanwhile would be counted too).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._registered = False
        self._spans: list[tuple[float, float]] | None = None

    def _listener(self, event, start, end, **_):
        if event in _COMPILE_EVENTS and self._spans is not None:
            self._spans.append((start, end))

    def __enter__(self):
        with self._lock:
            if not self._registered:
                monitoring.register_event_time_span_listener(self._listener)
                self._registered = True
            self._spans = []
        return self

    def __exit__(self, *exc):
        self.spans, self._spans = self._spans, None

    def seconds(self) -> float:
        """Length of the union of the recorded spans (nested traces are counted once)."""
        total, end = 0.0, -np.inf
        for s, e in sorted(self.spans):
            if e > end:
                total += e - max(s, end)
                end = e
        return total


_compile_spans = _CompileSpans()


def _timed(fn):
    """(result, total seconds, compilation seconds) of ``fn()``, waiting for the device."""
    with _compile_spans:
        t0 = time.perf_counter()
        out = jax.block_until_ready(fn())
        total = time.perf_counter() - t0
    return out, total, min(_compile_spans.seconds(), total)


def run_nuts(
    key,
    log_density: Callable | None,
    init_params: dict | None,
    settings: SamplerSettings,
    *,
    coords: dict | None = None,
    dims: dict | None = None,
    label: str = "nuts",
    target_accept: float = 0.8,
    init_jitter: float = 0.5,
    init_batched: bool = False,
    model: Callable | None = None,
    model_args: tuple = (),
    model_kwargs: dict | None = None,
    max_tree_depth: int = 10,
    data=None,
) -> SampleResult:
    """Sample with numpyro NUTS; see the module docstring.

    ``settings``: ``n_chains``, ``n_warmup`` (adaptation iterations, discarded), ``n_samples``
    and ``thin`` (``n_samples // thin`` draws kept per chain); ``chunk`` is not used (numpyro
    runs each phase as one compiled loop) and ``progress_every`` only switches the start and
    end log lines. Give either ``log_density`` (with ``init_params``) or ``model`` (then
    ``init_params``, if given, are unconstrained values of its latent sites).

    ``data`` (optional, any pytree of arrays): then ``log_density(params, data)`` is called, and
    ``data`` reaches the compiled loops as an argument, not as constants folded into them (see
    the module docstring); ``init_params`` must then be a flat dict of arrays.

    Parameters
    ----------
    key : jax.Array
        PRNG key; split into the jitter and MCMC keys.
    log_density : callable or None
        ``log_density(params) -> scalar`` (``log_density(params, data)`` with ``data``) on a dict
        of unconstrained arrays; None when ``model`` is given.
    init_params : dict or None
        One chain's starting values (unconstrained); with ``init_batched``, one per chain.
    settings : SamplerSettings
        Chains, warm-up, samples, thinning (see above).
    coords, dims : dict, optional
        For ``az.from_dict``.
    label : str
        Name of the run in the log.
    target_accept : float
        NUTS's target acceptance probability in step-size adaptation.
    init_jitter : float
        Half-width of the uniform noise added to ``init_params`` per chain (0: no jitter).
    init_batched : bool
        ``init_params`` already has a leading axis of ``n_chains``.
    model : callable, optional
        A numpyro model, instead of ``log_density`` (draws come back in constrained space).
    model_args : tuple
        Positional arguments of ``model``.
    model_kwargs : dict, optional
        Keyword arguments of ``model``.
    max_tree_depth : int
        NUTS's largest tree depth.
    data : pytree of arrays, optional
        Data passed to ``log_density`` and to the compiled loops as an argument.

    Returns
    -------
    SampleResult
        Draws, summary, timings; ``extra`` holds divergences and phase timings.

    Raises
    ------
    ValueError
        If not exactly one of ``log_density`` and ``model`` is given, a ``log_density`` comes
        without ``init_params``, or batched inits lack the chain axis.
    TypeError
        If, with ``data``, ``init_params`` is not a dict of arrays.
    """
    if (log_density is None) == (model is None):
        raise ValueError("run_nuts: give exactly one of log_density and model")
    if log_density is not None and init_params is None:
        raise ValueError("run_nuts: a log_density needs init_params")
    jitter_key, mcmc_key = jax.random.split(key)
    if init_params is not None:
        init_params = _chain_inits(jitter_key, init_params, settings.n_chains, init_jitter, init_batched)

    if model is None and data is None:
        kernel = NUTS(
            potential_fn=lambda p: -log_density(p), target_accept_prob=target_accept, max_tree_depth=max_tree_depth
        )
    else:
        if model is None:
            model, model_args = _density_model(log_density, init_params), (data,)
        kernel = NUTS(model, target_accept_prob=target_accept, max_tree_depth=max_tree_depth)
    n_iter = settings.n_draws * settings.thin  # as the Gibbs driver: whole thinning blocks
    mcmc = MCMC(
        kernel,
        num_warmup=settings.n_warmup,
        num_samples=n_iter,
        thinning=settings.thin,
        num_chains=settings.n_chains,
        chain_method="vectorized",
        progress_bar=False,
        jit_model_args=kernel.model is not None,
    )
    kwargs = model_kwargs or {}
    if settings.progress_every:
        log.info("%s: NUTS, %d chains, %d warm-up + %d iterations", label, settings.n_chains, settings.n_warmup, n_iter)

    # warm-up and sampling run separately so that each can be timed; numpyro continues the
    # sampling phase from the adapted state (step size, mass matrix) left by warmup()
    warmup_key, sample_key = jax.random.split(mcmc_key)

    def warmup():
        mcmc.warmup(warmup_key, *model_args, init_params=init_params, extra_fields=("diverging",), **kwargs)
        return mcmc.last_state

    def run():
        # after warmup() numpyro starts from the adapted state and ignores init_params
        mcmc.run(
            sample_key,
            *model_args,
            init_params=None if settings.n_warmup else init_params,
            extra_fields=("diverging",),
            **kwargs,
        )
        return mcmc.last_state

    warmup_total = warmup_compile = 0.0
    if settings.n_warmup > 0:
        _, warmup_total, warmup_compile = _timed(warmup)
    _, sampling_total, sampling_compile = _timed(run)

    samples = {k: np.asarray(v) for k, v in mcmc.get_samples(group_by_chain=True).items()}
    diverging = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"])
    idata = to_inference_data(samples, {"diverging": diverging}, coords=coords, dims=dims)

    bad = [name for name, v in samples.items() if not np.isfinite(v).all()]
    n_div = int(diverging.sum())
    if bad:
        diverged, reason = True, f"non-finite draws in {', '.join(bad)}"
    else:
        diverged, reason = False, "completed"
    if n_div:
        reason += f"; {n_div} divergent transitions of {diverging.size} kept iterations"
    compile_seconds = warmup_compile + sampling_compile
    wall = warmup_total + sampling_total - compile_seconds
    extra = {
        "n_divergent": n_div,
        "warmup_seconds": warmup_total - warmup_compile,
        "sampling_seconds": sampling_total - sampling_compile,
        "warmup_compile_seconds": warmup_compile,
        "sampling_compile_seconds": sampling_compile,
    }
    if settings.progress_every:
        log.info(
            "%s: %s, %.2f s (+%.2f s compile), %d divergent transitions",
            label,
            reason.split(";")[0],
            wall,
            compile_seconds,
            n_div,
        )
    return SampleResult(
        idata, summary_table(idata), settings.n_warmup + n_iter, wall, compile_seconds, diverged, reason, extra
    )


def _density_model(log_density: Callable, chain_inits: dict) -> Callable:
    """A numpyro model whose joint density is ``log_density(params, data)``.

    Each parameter is an improper flat site on the real line (so its unconstrained value is the
    value itself) and the density enters through ``numpyro.factor``. This is the public way to
    give numpyro a density with data as an argument: a ``potential_fn`` takes parameters only.
    """
    if not isinstance(chain_inits, dict):
        raise TypeError("run_nuts: with data=, init_params must be a dict of arrays")
    shapes = {name: tuple(jnp.shape(x))[1:] for name, x in chain_inits.items()}  # without the chain axis

    def model(data):
        params = {
            name: numpyro.sample(name, dist.ImproperUniform(dist.constraints.real, (), shape))
            for name, shape in shapes.items()
        }
        numpyro.factor("log_density", log_density(params, data))

    return model


def _chain_inits(key, init_params: dict, n_chains: int, jitter: float, batched: bool) -> dict:
    """Per-chain starting points with a leading chain axis."""
    leaves, treedef = jax.tree.flatten(init_params)
    # integers would give the gradient nothing to move: start from their floating-point values
    leaves = [
        x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype(jnp.result_type(float))
        for x in map(jnp.asarray, leaves)
    ]
    if batched:
        for x in leaves:
            if x.ndim == 0 or x.shape[0] != n_chains:
                raise ValueError(
                    f"run_nuts: init_batched=True needs a leading axis of {n_chains} chains, got shape {x.shape}"
                )
        return jax.tree.unflatten(treedef, leaves)
    keys = jax.random.split(key, len(leaves))
    out = []
    for k, x in zip(keys, leaves):
        x = jnp.broadcast_to(x, (n_chains, *x.shape))
        if jitter > 0 and jnp.issubdtype(x.dtype, jnp.inexact):
            x = x + jax.random.uniform(k, x.shape, x.dtype, -jitter, jitter)
        out.append(x)
    return jax.tree.unflatten(treedef, out)
