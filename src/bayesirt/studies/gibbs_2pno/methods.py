"""The gibbs_2pno study's methods, one function each (``METHODS``), and ``fit``, which looks one
up. Every method takes (data, truth, condition, settings, seed) and returns a ``MethodResult``
whose record is built by ``records.sample_record``, whose estimates carry the posterior mean,
sd, 5% and 95% quantiles, MCSE, bulk and tail ESS and R-hat of every parameter (with the truth
where there is one), and whose draws (InferenceData) become ``posterior.nc``.

* ``gibbs``: the 2PNO data-augmentation Gibbs sampler, missing cells' latent normals drawn
  untruncated (the textbook form; ``inference.samplers.gibbs`` with ``missing="augment"``);
* ``gibbs_omit``: the same sampler with missing cells left out of every update
  (``missing="omit"``): the same posterior as ``gibbs``;
* ``gibbs_seed``: seed 001's plain sampler, ``gibbs`` without the moves along the model's
  symmetries (``expand=False``; ``gibbs_2pno.seed_methods``): the same posterior, mixing as the seed's;
* ``nuts``: numpyro NUTS on the marginal 2PNO posterior (Phi likelihood, no augmentation), the
  reference;
* ``gibbs_mixture``: seed 001's two-component Gaussian mixture (known precision 1 / sd^2) by
  ``inference.samplers.gibbs_mixture``; its data are the heights table, its truth the group shares and
  generating means.

``fit_block`` fits the replications of one (design, missingness, method) in one job: the Gibbs
samplers as one program over the block's data sets (``inference.samplers.sampling_blocks``), NUTS one
replication after another; each replication's result is the one ``fit`` gives it alone, up to
float32 rounding, with the block in its record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from bayesirt import io, records, tables
from bayesirt.evaluation.recovery import metrics
from bayesirt.inference.samplers import gibbs as gibbs_sampler
from bayesirt.inference.samplers import gibbs_mixture as mixture_sampler
from bayesirt.inference.samplers.posterior_summary import summary_table
from bayesirt.inference.samplers.sampling import SamplerSettings, sample, to_inference_data
from bayesirt.inference.samplers.sampling_blocks import sample_block
from bayesirt.models import twopno
from bayesirt.studies.base import MethodResult
from bayesirt.studies.gibbs_2pno.conditions import ITEM_PARAMETERS, PARAMETERS, STUDY, Condition
from bayesirt.studies.gibbs_2pno.seed_methods import SEED_SAMPLER
from bayesirt.studies.gibbs_2pno.settings import Mixture, Sampler, Settings, block_key

KEYS = ["parameter", "item", "person"]
STATS = ["mean", "sd", "q5", "q95", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"]


def sampler_settings(sampler: Sampler) -> SamplerSettings:
    """The study's sampler settings for ``inference.samplers.sampling``: a progress line per chunk of
    sweeps (a paper-scale block runs for many minutes)."""
    return SamplerSettings(
        n_chains=sampler.n_chains,
        n_warmup=sampler.n_warmup,
        n_samples=sampler.n_samples,
        thin=sampler.thin,
        chunk=sampler.chunk,
        progress_every=1,
        chain_processes=sampler.chain_processes,
    )


# ----------------------------------------------------------------------------- the 2PNO fits

# each Gibbs method's treatment of missing cells and whether it moves along the symmetries
GIBBS_VARIANTS = {"gibbs": ("augment", True), "gibbs_omit": ("omit", True)}
GIBBS_VARIANTS["gibbs_seed"] = (SEED_SAMPLER.missing, SEED_SAMPLER.expand)


def gibbs(responses, truth, cond, settings: Settings, seed: int) -> MethodResult:
    """The Gibbs sampler with missing cells augmented (drawn untruncated)."""
    return _gibbs(responses, truth, cond, settings, seed, *GIBBS_VARIANTS["gibbs"])


def gibbs_omit(responses, truth, cond, settings: Settings, seed: int) -> MethodResult:
    """The Gibbs sampler with missing cells left out of every update."""
    return _gibbs(responses, truth, cond, settings, seed, *GIBBS_VARIANTS["gibbs_omit"])


def gibbs_seed(responses, truth, cond, settings: Settings, seed: int) -> MethodResult:
    """Seed 001's plain sampler: no moves along the model's symmetries."""
    return _gibbs(responses, truth, cond, settings, seed, *GIBBS_VARIANTS["gibbs_seed"])


def nuts(responses, truth, cond, settings: Settings, seed: int) -> MethodResult:
    """NUTS on the marginal 2PNO posterior; its record counts the divergent transitions."""
    return _finish(*_nuts_run(responses, cond, settings, seed), truth)


def _nuts_run(responses, cond, settings: Settings, seed: int):
    y, priors, key, fields = _start(responses, cond, settings, seed)
    sampler = sampler_settings(settings.nuts)
    res = _run_nuts(key, y, priors, sampler, cond.path)
    fields["n_divergent"] = int((res.extra or {}).get("n_divergent", 0))
    return res, sampler, fields


def _gibbs(responses, truth, cond, settings: Settings, seed: int, missing: str, expand: bool) -> MethodResult:
    k, key, fields = _gibbs_kernel(responses, cond, settings, seed, missing, expand)
    sampler = sampler_settings(settings.gibbs)
    res = sample(
        key, k.init_fn, k.step_fn, k.record_fn, sampler, coords=_coords(k), dims=k.dims, label=cond.path, data=k.data
    )
    return _finish(res, sampler, fields, truth)


def _gibbs_kernel(responses, cond, settings: Settings, seed: int, missing: str, expand: bool):
    """The Gibbs kernel of one replication, its key and its record's condition fields."""
    y, priors, key, fields = _start(responses, cond, settings, seed)
    names = [it.name for it in responses.items]
    k = gibbs_sampler.kernel(y, priors, missing, abilities=True, item_names=names, where=cond.path, expand=expand)
    fields["expand"] = bool(expand)  # the record says whether the sweeps moved along the symmetries
    return k, key, fields


def _coords(k: gibbs_sampler.Kernel) -> dict:
    n, j = k.data.y.shape
    return {"item": np.arange(j), "person": np.arange(n)}


# ----------------------------------------------------------------------------- blocks


@dataclass(frozen=True)
class Replication:
    """One replication of a condition: its responses, truth, condition (``rep`` included) and seed."""

    responses: io.ResponseMatrix
    truth: pd.DataFrame | None
    cond: Condition
    seed: int


def fit_block(reps: list[Replication], settings: Settings) -> list[MethodResult]:
    """The replications of one (design, missingness, method) fitted in one job, each giving the
    ``MethodResult`` its single ``fit`` gives, with the block in its record (``block``: size,
    position, sweeps run, working memory; ``timing``: the block's share and its own times).

    The Gibbs samplers sweep every replication's chains in one program
    (``inference.samplers.sampling_blocks.sample_block``); a replication that goes non-finite is
    recorded as diverged while the others finish. NUTS fits them one after another.

    Raises
    ------
    MemoryError
        When a Gibbs block would not fit in memory, naming the design's ``block_size`` key.
    """
    cond = reps[0].cond
    if cond.method not in (*GIBBS_VARIANTS, "nuts"):
        known = [*GIBBS_VARIANTS, "nuts"]
        raise ValueError(f"gibbs_2pno method '{cond.method}' has no blocks; expected one of {known}")
    label = f"{cond.design}/{cond.missing}/{cond.method} reps {reps[0].cond.rep}-{reps[-1].cond.rep}"
    if cond.method == "nuts":
        runs, t0 = [], time.perf_counter()
        for rep in reps:
            runs.append(_nuts_run(rep.responses, rep.cond, settings, rep.seed))
        wall, compile_seconds = time.perf_counter() - t0, sum(res.compile_seconds for res, _, _ in runs)
        for position, (res, _, _) in enumerate(runs):
            block = {"size": len(reps), "position": position, "wall_seconds": wall}
            block |= {"compile_seconds": compile_seconds, "left_at_step": res.n_sweeps, "memory_bytes": 0}
            res.extra["block"] = block
    else:
        variant = GIBBS_VARIANTS[cond.method]
        kernels = [_gibbs_kernel(rep.responses, rep.cond, settings, rep.seed, *variant) for rep in reps]
        sampler = sampler_settings(settings.gibbs)
        k = kernels[0][0]  # the block shares its functions; only data and keys differ
        results = sample_block(
            [key for _, key, _ in kernels],
            k.init_fn,
            k.step_fn,
            k.record_fn,
            sampler,
            [kernel.data for kernel, _, _ in kernels],
            coords=_coords(k),
            dims=k.dims,
            label=label,
            setting=block_key(cond.design),
        )
        runs = [(res, sampler, fields) for res, (_, _, fields) in zip(results, kernels, strict=True)]
    return [_finish(*run, rep.truth, block_size=settings.block_size(cond.design)) for run, rep in zip(runs, reps)]


def _start(responses, cond, settings: Settings, seed: int):
    """The responses as an array, the priors, the fit's key and the record's condition fields."""
    y = np.asarray(responses.responses)
    n, j = y.shape
    priors = twopno.Priors(**settings.priors)  # keys checked by the config schema
    key = jax.random.key(seed)
    fields = {
        "model": "2pno",
        "method": cond.method,
        "study": STUDY,
        "dataset": cond.design,
        "design": cond.design,
        "missing": cond.missing,
        "condition": f"{cond.missing}_{cond.method}",
        "replication": cond.rep,
        "seed": int(seed),
        "n_persons": int(n),
        "n_items": int(j),
        "missing_rate": float(np.mean(y == -1)),
        "priors": asdict(priors),
    }
    return y, priors, key, fields


def _finish(
    res, sampler: SamplerSettings, fields: dict, truth: pd.DataFrame | None, block_size: int | None = None
) -> MethodResult:
    """Estimates with the truth, recovery in the record, item ESS per second with the timings;
    a fit of a block (``res.extra["block"]``) records the block and, in its settings, the
    design's ``block_size``."""
    fields["settings"] = {"sampler": asdict(sampler)}
    if block_size is not None:
        fields["settings"]["block_size"] = int(block_size)
    fields["n_chains"] = sampler.n_chains
    est = estimates_table(res.summary, truth)
    fields["evaluation"] = evaluation(est)
    block = (res.extra or {}).get("block")
    # the block's size, the fit's position, its sweeps and the block's working memory; None alone
    fields["block"] = {k: block[k] for k in ("size", "position", "left_at_step", "memory_bytes")} if block else None
    record = records.sample_record(res, fields)
    if block:
        timing = {"block_wall_seconds": block["wall_seconds"], "block_compile_seconds": block["compile_seconds"]}
        record["timing"].update(timing)
    # ESS per second depends on the machine: it goes with the timings
    record["timing"].update(item_ess(res.summary, res.wall_seconds))
    return MethodResult(record, est, None, res.idata)


def _run_nuts(key, y, priors, sampler: SamplerSettings, label: str):
    """NUTS on the marginal 2PNO posterior; returns a SampleResult whose draws are on the
    model's scale (discrimination, not its log) with item and person coordinates."""
    from bayesirt.inference.samplers import nuts as nuts_sampler  # numpyro: imported on first use

    n, j = y.shape
    init = {k: jnp.asarray(v) for k, v in twopno.unconstrain(twopno.initial_values(y)).items()}
    res = nuts_sampler.run_nuts(
        key,
        lambda p, data: twopno.log_joint_unconstrained(p, data["y"], priors),
        init,
        sampler,
        data={"y": jnp.asarray(y, jnp.int8)},
        label=label,
    )
    post = res.idata.posterior
    draws = {
        "discrimination": np.exp(post["log_discrimination"].values),
        "difficulty": post["difficulty"].values,
        "ability": post["ability"].values,
    }
    idata = to_inference_data(
        draws,
        {"diverging": res.idata.sample_stats["diverging"].values},
        coords={"item": np.arange(j), "person": np.arange(n)},
        dims={"discrimination": ["item"], "difficulty": ["item"], "ability": ["person"]},
    )
    return res._replace(idata=idata, summary=summary_table(idata))


def estimates_table(summary: pd.DataFrame, truth: pd.DataFrame | None) -> pd.DataFrame:
    """Tidy estimates from a sampler's summary table: posterior mean, sd, 5% and 95% quantiles,
    MCSE, bulk and tail ESS and R-hat of every item parameter and ability (EAP and posterior sd),
    with the true value attached."""
    s = summary[summary.parameter.isin(PARAMETERS)].reset_index(drop=True)
    est = pd.DataFrame(
        {
            "parameter": s["parameter"].to_numpy(),
            "item": s["item"].fillna(-1).astype(int).to_numpy() if "item" in s else -1,
            "person": s["person"].fillna(-1).astype(int).to_numpy() if "person" in s else -1,
            "scale": "all",
            "category": -1,
        }
    )
    for col in STATS:
        est[col] = s[col].to_numpy(float)
    order = {p: k for k, p in enumerate(PARAMETERS)}
    est = est.sort_values(
        ["parameter", "item", "person"], key=lambda c: c.map(order) if c.name == "parameter" else c, kind="stable"
    ).reset_index(drop=True)
    # real data sets come with an empty truth table: no true column then
    return tables.attach_truth(est, truth, KEYS) if truth is not None and len(truth) else est


def evaluation(est: pd.DataFrame) -> dict:
    """Recovery (RMSE, correlation) of every parameter block against the truth, and the
    coverage of the true values by the 90% intervals."""
    out = {}
    if "true" not in est:
        return out
    for par in PARAMETERS:
        d = est[est.parameter == par]
        if len(d):
            m = metrics(d["mean"], d["true"])
            out[f"{par}_rmse"], out[f"{par}_corr"] = float(m["rmse"]), float(m["corr"])
            out[f"{par}_coverage_90"] = float(np.mean((d["true"] >= d["q5"]) & (d["true"] <= d["q95"])))
    return out


def item_ess(summary: pd.DataFrame, wall_seconds: float) -> dict:
    """Bulk ESS of the item parameters (minimum and median) and per second of sampling."""
    ess = summary[summary.parameter.isin(ITEM_PARAMETERS)]["ess_bulk"].to_numpy(float)
    lo, med = float(np.nanmin(ess)), float(np.nanmedian(ess))
    wall = max(float(wall_seconds), 1e-9)
    return {
        "item_min_ess_bulk": lo,
        "item_median_ess_bulk": med,
        "item_min_ess_per_second": lo / wall,
        "item_median_ess_per_second": med / wall,
    }


# ------------------------------------------------------------------------------- the mixture


def gibbs_mixture(data: pd.DataFrame, truth, cond, settings: Settings, seed: int) -> MethodResult:
    """The two-component mixture on the heights ``data`` (``truth``: unused, the truth is the
    data's group shares and the generating means), with the ordering mu_0 < mu_1 imposed after
    every sweep (label switching; see ``inference.samplers.gibbs_mixture``). Estimates: pi (weight of
    component 1, the taller), mu_0, mu_1."""
    mixture = settings.mixture
    priors = mixture_priors(mixture)
    sampler = sampler_settings(mixture.sampler)
    k = mixture_sampler.kernel(data["height"].to_numpy(), priors, where="mixture heights")
    res = sample(
        jax.random.key(seed),
        k.init_fn,
        k.step_fn,
        k.record_fn,
        sampler,
        coords=k.coords,
        dims=k.dims,
        label=f"{STUDY}/mixture",
    )
    est = mixture_estimates(res.summary, data, mixture)
    fields = {
        "model": "gaussian_mixture",
        "method": cond.method,
        "study": STUDY,
        "dataset": "heights",
        "condition": "mixture",
        "replication": 0,
        "seed": int(seed),
        "n_persons": int(len(data)),
        "n_items": 1,
        "priors": asdict(priors),
        "settings": {"sampler": asdict(sampler)},
        "n_chains": sampler.n_chains,
        "label_switching": "ordering mu_0 < mu_1 imposed by relabelling after every sweep",
    }
    return MethodResult(records.sample_record(res, fields), est, None, res.idata)


def mixture_priors(mixture: Mixture) -> mixture_sampler.MixturePriors:
    p = mixture.priors
    return mixture_sampler.MixturePriors(
        lam=1.0 / float(mixture.sd) ** 2,
        nu=float(p["nu"]),
        rho=float(p["rho"]),
        alpha=float(p["alpha"]),
        beta=float(p["beta"]),
    )


def mixture_estimates(summary: pd.DataFrame, data: pd.DataFrame, mixture: Mixture) -> pd.DataFrame:
    """pi and the component means (``category`` 0, 1) with the group share and the generating
    means as the truth."""
    s = summary[summary.parameter.isin(["pi", "mu"])].reset_index(drop=True)
    comp = s["component"].fillna(-1).astype(int).to_numpy() if "component" in s else np.full(len(s), -1)
    est = pd.DataFrame({"parameter": s["parameter"], "item": -1, "person": -1, "scale": "all", "category": comp})
    for col in STATS:
        est[col] = s[col].to_numpy(float)
    share = float(np.mean(data["group"] == 1))
    est["true"] = np.where(
        est.parameter == "pi", share, np.where(est.category == 0, mixture.mean_women, mixture.mean_men)
    )
    return est


# ------------------------------------------------------------------------------- the registry

METHODS: dict[str, Callable[..., MethodResult]] = {
    "gibbs": gibbs,
    "gibbs_omit": gibbs_omit,
    "gibbs_seed": gibbs_seed,
    "nuts": nuts,
    "gibbs_mixture": gibbs_mixture,
}


def fit(data, truth, cond, settings: Settings, *, seed: int) -> MethodResult:
    """One fit: the method ``cond.method`` on one condition's data (a ResponseMatrix and its
    truth table; the heights table for the mixture) with the fit's seed."""
    if cond.method not in METHODS:
        raise ValueError(f"gibbs_2pno method '{cond.method}' is not known; expected one of {list(METHODS)}")
    return METHODS[cond.method](data, truth, cond, settings, seed)
