"""Study ``gibbs_2pno`` (seed 001): the vectorized, multi-chain data-augmentation Gibbs sampler
for the two-parameter normal ogive (2PNO) model, against NUTS on the same posterior; and the
seed's two-component Gaussian mixture fitted by its own Gibbs sampler.

A condition is (design, missingness, method, replication). Every replication of a simulated
design draws one complete 2PNO data set with its truth (``simulate_condition``). A design that
names a ``dataset`` instead (a prepared binary data set of the config, e.g. a questionnaire read
by the ``table`` source) fits those real responses, natural missing cells included
(``observed_condition``); it has no truth, so its recovery columns stay empty. The design's missingness
(``mcar0``, ``mcar20``, ...: kind and percent of all cells, through
``data.missingness.inject``) then hides cells. All methods of a condition share the data and
the fit seed.

Methods (``METHOD_NAMES``):

* ``gibbs``: missing cells' latent normals drawn untruncated (data augmentation, the textbook
  form; ``inference.gibbs`` with ``missing="augment"``);
* ``gibbs_omit``: missing cells left out of every update (``missing="omit"``); fitted only
  where the condition has missing cells, where it must give the same posterior as ``gibbs``;
* ``nuts``: numpyro NUTS on the marginal posterior (Phi likelihood, no augmentation), the
  reference; only where a design sets ``nuts: true`` (small designs).

The shape of every study:

    conditions(config)                          -> [Condition]   (parse time, plain Python)
    simulate_condition(design, missing, seed)   -> (responses, truth)
    run_fit(responses, truth, cond, ...)        -> records.FitOutput
    aggregate(records, estimates)               -> dict of tidy tables
    figures(tables, posteriors, outputs)        -> PNG figures

and, for the mixture example, ``simulate_mixture``, ``run_mixture`` and ``mixture_figure``.
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np
import pandas as pd

from bayesirt.studies.design_conditions import DesignCondition, parse_missing

STUDY = "gibbs_2pno"
METHOD_NAMES = ("gibbs", "gibbs_omit", "nuts")
MISSING_MODE = {"gibbs": "augment", "gibbs_omit": "omit"}
ITEM_PARAMETERS = ("discrimination", "difficulty")
PARAMETERS = ITEM_PARAMETERS + ("ability",)
KEYS = ["parameter", "item", "person"]
STATS = ["mean", "sd", "q5", "q95", "mcse_mean", "ess_bulk", "ess_tail", "r_hat"]


# ----------------------------------------------------------------------------- conditions

class Condition(DesignCondition):
    """One fit of the study."""

    study = STUDY


def condition_methods(design: dict, missing: str, methods) -> list[str]:
    """The methods fitted to one condition: NUTS only where the design asks for it, the
    omitted-cells Gibbs sampler only where cells are missing (otherwise it is ``gibbs``)."""
    rate = parse_missing(missing)[1]
    # real data carry their own missing cells, so both treatments of them are fitted
    has_missing = rate > 0 or "dataset" in design
    return [m for m in methods
            if (m != "nuts" or design.get("nuts", False)) and (m != "gibbs_omit" or has_missing)]


def conditions(config: dict) -> list[Condition]:
    """Every fit the ``gibbs_2pno`` block of a config asks for: designs x missingness x methods
    x replications (plain Python, cheap: Snakemake calls it at parse time)."""
    if not config or not config.get("enabled", True):
        return []
    methods = config.get("methods", METHOD_NAMES)
    unknown = sorted(set(methods) - set(METHOD_NAMES))
    if unknown:
        raise ValueError(f"gibbs_2pno methods {unknown} are not known; expected some of {list(METHOD_NAMES)}")
    out = []
    for name, design in config.get("designs", {}).items():
        for missing in design.get("missing", ["mcar0"]):
            for method in condition_methods(design, missing, methods):
                out += [Condition(name, missing, method, rep) for rep in range(int(design.get("replications", 1)))]
    return out


# ----------------------------------------------------------------------------------- data

# seed 001's recovery design: a_j ~ U(0.5, 2), d_j ~ N(0, 1), theta_i ~ N(0, 1)
SEED_DISCRIMINATION_RANGE = (0.5, 2.0)


def simulate_condition(design: dict, missing: str, seed: int, *, missing_seed: int):
    """2PNO data (``data.simulate_binary``, model ``2pno``) from ``seed``, shared by the
    replication's missingness conditions, then the condition's missingness from
    ``missing_seed``. Returns (ResponseMatrix with -1 in hidden cells, truth table)."""
    from bayesirt.data.missingness import inject
    from bayesirt.data.simulate_binary import simulate_binary

    low, high = design.get("discrimination_range", SEED_DISCRIMINATION_RANGE)
    rm, truth = simulate_binary(seed, int(design["n_persons"]), int(design["n_items"]), model="2pno",
                                discrimination_range=(float(low), float(high)))
    kind, rate = parse_missing(missing)
    rm.attrs["design_missing"] = missing
    if rate > 0:
        rm = inject(rm, kind, rate, seed=missing_seed)[0]
    return rm, truth


def observed_condition(responses, missing: str, *, missing_seed: int, where: str):
    """A real binary data set as one condition of a ``dataset`` design: the responses checked
    as binary (0, 1, -1 for missing; ``models.twopno.check_binary_responses`` names the first
    offending item and person), the condition's extra missingness injected on top of the
    natural one, and an empty truth table (real data have no true values). Persons with no
    observed response are kept: their ability draws come from the prior (the check warns with
    their count). Returns (ResponseMatrix, truth)."""
    from bayesirt.data.missingness import inject
    from bayesirt.data.simulate_binary import truth_table
    from bayesirt.io import ResponseMatrix
    from bayesirt.models.twopno import check_binary_responses

    y = check_binary_responses(responses.responses, [it.name for it in responses.items], where=where)
    rm = ResponseMatrix(y.astype(np.int16), list(responses.items),
                        {**responses.attrs, "design_missing": missing, "natural_missing_rate": float(np.mean(y == -1))})
    kind, rate = parse_missing(missing)
    if rate > 0:
        rm = inject(rm, kind, rate, seed=missing_seed)[0]
    return rm, truth_table([], [], [])


# ------------------------------------------------------------------------------------ fits

def sampler_settings(cfg: dict | None, defaults: dict):
    from bayesirt.inference.sampling import SamplerSettings

    s = {**defaults, **(cfg or {})}
    return SamplerSettings(n_chains=int(s["n_chains"]), n_warmup=int(s["n_warmup"]), n_samples=int(s["n_samples"]),
                           thin=int(s.get("thin", 1)), chunk=int(s.get("chunk", 500)), progress_every=0,
                           chain_processes=int(s.get("chain_processes", 1)))


GIBBS_DEFAULTS = {"n_chains": 4, "n_warmup": 1000, "n_samples": 2000, "thin": 1, "chunk": 500}
NUTS_DEFAULTS = {"n_chains": 4, "n_warmup": 500, "n_samples": 1000}


def estimates_table(summary: pd.DataFrame, truth: pd.DataFrame | None) -> pd.DataFrame:
    """Tidy estimates from a sampler's summary table: posterior mean, sd, 5% and 95% quantiles,
    MCSE, bulk and tail ESS and R-hat of every item parameter and ability (EAP and posterior sd),
    with the true value attached."""
    from bayesirt import tables

    s = summary[summary.parameter.isin(PARAMETERS)].reset_index(drop=True)
    est = pd.DataFrame({"parameter": s["parameter"].to_numpy(),
                        "item": s["item"].fillna(-1).astype(int).to_numpy() if "item" in s else -1,
                        "person": s["person"].fillna(-1).astype(int).to_numpy() if "person" in s else -1,
                        "scale": "all", "category": -1})
    for col in STATS:
        est[col] = s[col].to_numpy(float)
    order = {p: k for k, p in enumerate(PARAMETERS)}
    est = est.sort_values(["parameter", "item", "person"], key=lambda c: c.map(order) if c.name == "parameter" else c,
                          kind="stable").reset_index(drop=True)
    # real data sets come with an empty truth table: no true column then
    return tables.attach_truth(est, truth, KEYS) if truth is not None and len(truth) else est


def evaluation(est: pd.DataFrame) -> dict:
    """Recovery (RMSE, correlation) of every parameter block against the truth, and the
    coverage of the true values by the 90% intervals."""
    from bayesirt.evaluation.recovery import metrics

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
    return {"item_min_ess_bulk": lo, "item_median_ess_bulk": med,
            "item_min_ess_per_second": lo / wall, "item_median_ess_per_second": med / wall}


def _nuts(key, y, priors, settings, label):
    """NUTS on the marginal 2PNO posterior; returns a SampleResult whose draws are on the
    model's scale (discrimination, not its log) with item and person coordinates."""
    import jax.numpy as jnp

    from bayesirt.inference import nuts
    from bayesirt.inference.sampling import summary_table, to_inference_data
    from bayesirt.models import twopno

    n, j = y.shape
    init = {k: jnp.asarray(v) for k, v in twopno.unconstrain(twopno.initial_values(y)).items()}
    res = nuts.run_nuts(key, lambda p, data: twopno.log_joint_unconstrained(p, data["y"], priors), init, settings,
                        data={"y": jnp.asarray(y, jnp.int8)}, label=label)
    post = res.idata.posterior
    draws = {"discrimination": np.exp(post["log_discrimination"].values), "difficulty": post["difficulty"].values,
             "ability": post["ability"].values}
    idata = to_inference_data(draws, {"diverging": res.idata.sample_stats["diverging"].values},
                              coords={"item": np.arange(j), "person": np.arange(n)},
                              dims={"discrimination": ["item"], "difficulty": ["item"], "ability": ["person"]})
    return res._replace(idata=idata, summary=summary_table(idata))


def fit_threads(study: dict, method: str) -> int:
    """Cores a fit job uses: the Gibbs sampler's ``chain_processes`` (capped at its chains), else 1."""
    if method not in MISSING_MODE:
        return 1
    settings = sampler_settings(study.get("gibbs"), GIBBS_DEFAULTS)
    return min(settings.chain_processes, settings.n_chains)


def run_fit(responses, truth: pd.DataFrame | None, cond: Condition, *, study: dict, seed: int):
    """One fit: the Gibbs sampler (augmented or omitted missing cells) or NUTS on one
    condition's data. Returns ``records.FitOutput`` (record through ``records.sample_record``,
    estimates with the truth, the draws as InferenceData for ``posterior.nc``)."""
    import jax

    from bayesirt import records
    from bayesirt.inference import gibbs
    from bayesirt.inference.sampling import sample
    from bayesirt.models import twopno

    y = np.asarray(responses.responses)
    n, j = y.shape
    priors = twopno.Priors(**study.get("priors", {}))  # keys checked by the config schema
    key = jax.random.key(seed)
    fields = {"model": "2pno", "method": cond.method, "study": STUDY, "dataset": cond.design,
              "design": cond.design, "missing": cond.missing, "condition": f"{cond.missing}_{cond.method}",
              "replication": cond.rep, "seed": int(seed), "n_persons": int(n), "n_items": int(j),
              "missing_rate": float(np.mean(y == -1)), "priors": asdict(priors)}
    if cond.method in MISSING_MODE:
        settings = sampler_settings(study.get("gibbs"), GIBBS_DEFAULTS)
        k = gibbs.kernel(y, priors, MISSING_MODE[cond.method], abilities=True,
                         item_names=[it.name for it in responses.items], where=cond.path)
        coords = {"item": np.arange(j), "person": np.arange(n)}
        res = sample(key, k.init_fn, k.step_fn, k.record_fn, settings, coords=coords, dims=k.dims, label=cond.path,
                     data=k.data)
    elif cond.method == "nuts":
        settings = sampler_settings(study.get("nuts"), NUTS_DEFAULTS)
        res = _nuts(key, y, priors, settings, cond.path)
        fields["n_divergent"] = int((res.extra or {}).get("n_divergent", 0))
    else:
        raise ValueError(f"gibbs_2pno method '{cond.method}' is not known; expected one of {list(METHOD_NAMES)}")
    fields["settings"] = {"sampler": asdict(settings)}
    fields["n_chains"] = settings.n_chains
    est = estimates_table(res.summary, truth)
    fields["evaluation"] = evaluation(est)
    record = records.sample_record(res, fields)
    # ESS per second depends on the machine: it goes with the timings
    record["timing"].update(item_ess(res.summary, res.wall_seconds))
    return records.FitOutput(record, est, None, res.idata)


# ------------------------------------------------------------------------------- tables

def fit_row(record: dict) -> dict:
    """One row of fits.csv from a fit record (no timings: those go to timings.csv)."""
    d = record["diagnostics"]
    return {"design": record["design"], "missing": record["missing"], "method": record["method"],
            "rep": record["replication"], "n_persons": record["n_persons"], "n_items": record["n_items"],
            "missing_rate": record["missing_rate"], "n_chains": record["n_chains"], "sweeps": record["steps"],
            "converged": record["converged"], "max_r_hat": d["max_r_hat"], "min_ess_bulk": d["min_ess_bulk"],
            "min_ess_tail": d["min_ess_tail"], **record.get("evaluation", {})}


def _diagnostics(rec: dict, est: pd.DataFrame) -> list[dict]:
    rows = []
    for par in PARAMETERS:
        e = est[est.parameter == par]
        if not len(e):
            continue
        rows.append({"missing": rec["missing"], "method": rec["method"], "rep": rec["replication"],
                     "parameter": par, "n": len(e), "max_r_hat": e["r_hat"].max(),
                     "share_r_hat_below_1.01": float(np.mean(e["r_hat"] < 1.01)),
                     "min_ess_bulk": e["ess_bulk"].min(), "median_ess_bulk": e["ess_bulk"].median(),
                     "min_ess_tail": e["ess_tail"].min(), "max_mcse_mean": e["mcse_mean"].max()})
    return rows


def compare(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]) -> pd.DataFrame:
    """Item parameters of two fits of the same data side by side: means, sds, 90% intervals,
    MCSEs, and the difference of means in units of its Monte Carlo error
    z = (m_a - m_b) / sqrt(mcse_a^2 + mcse_b^2), and the ratio of sds."""
    cols = ["parameter", "item", "mean", "sd", "q5", "q95", "mcse_mean", "ess_bulk"]
    ia, ib = (x[x.parameter.isin(ITEM_PARAMETERS)] for x in (a, b))
    keep = cols + (["true"] if "true" in ia else [])
    m = ia[keep].merge(ib[cols], on=["parameter", "item"], suffixes=tuple(f"_{n}" for n in names))
    na, nb = names
    m["z"] = (m[f"mean_{na}"] - m[f"mean_{nb}"]) / np.sqrt(m[f"mcse_mean_{na}"] ** 2 + m[f"mcse_mean_{nb}"] ** 2)
    m["sd_ratio"] = m[f"sd_{na}"] / m[f"sd_{nb}"]
    return m


def aggregate(fit_records: list[dict], estimates: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Tidy tables of one design from its fits:

    ``fits``         one row per fit: convergence, worst diagnostics, recovery
    ``recovery``     mean and sd over replications of RMSE, correlation and 90% coverage per
                     missingness x method, with the number of replications
    ``diagnostics``  R-hat and ESS per parameter block of every fit
    ``nuts``         Gibbs (augmented) against NUTS, every item parameter (empty without NUTS)
    ``missing``      augmented against omitted missing cells, every item parameter
    ``timings``      wall and compile seconds, item ESS and ESS per second (run-dependent)
    """
    fits = pd.DataFrame([fit_row(r) for r in fit_records]).sort_values(["missing", "method", "rep"], kind="stable")
    fits = fits.reset_index(drop=True)
    metric_cols = [c for c in fits.columns if c.endswith(("_rmse", "_corr", "_coverage_90"))]
    group = fits.groupby(["design", "missing", "method"], sort=True)
    recovery = group[metric_cols].mean().add_suffix("_mean").join(group[metric_cols].std().add_suffix("_sd"))
    recovery.insert(0, "replications", group.size())
    recovery.insert(1, "n_chains", group["n_chains"].first())
    recovery.insert(2, "converged", group["converged"].mean())
    recovery = recovery.reset_index()

    by_key = {(r["missing"], r["method"], r["replication"]): (r, e) for r, e in zip(fit_records, estimates)}
    diagnostics = pd.DataFrame([row for r, e in by_key.values() for row in _diagnostics(r, e)])
    diagnostics = diagnostics.sort_values(["missing", "method", "rep", "parameter"], kind="stable").reset_index(drop=True)

    def pairs(other: str, names: tuple[str, str]) -> pd.DataFrame:
        out = []
        for (missing, method, rep), (_, e) in sorted(by_key.items()):
            if method == "gibbs" and (missing, other, rep) in by_key:
                c = compare(e, by_key[(missing, other, rep)][1], names)
                c.insert(0, "rep", rep)
                c.insert(0, "missing", missing)
                out.append(c)
        return pd.concat(out, ignore_index=True) if out else pd.DataFrame(
            columns=["missing", "rep", "parameter", "item", "z", "sd_ratio"])

    timings = pd.DataFrame([{"design": r["design"], "missing": r["missing"], "method": r["method"],
                             "rep": r["replication"], "n_chains": r["n_chains"], "sweeps": r["steps"],
                             **{k: r["timing"][k] for k in ("wall_seconds", "compile_seconds", "item_min_ess_bulk",
                                                           "item_median_ess_bulk", "item_min_ess_per_second",
                                                           "item_median_ess_per_second")}}
                            for r in fit_records]).sort_values(["missing", "method", "rep"], kind="stable")
    return {"fits": fits, "recovery": recovery, "diagnostics": diagnostics,
            "nuts": pairs("nuts", ("gibbs", "nuts")), "missing": pairs("gibbs_omit", ("augment", "omit")),
            "timings": timings.reset_index(drop=True)}


def agreement(pairs: pd.DataFrame) -> dict:
    """Summary of a side-by-side table: how many item parameters, the largest |z|, the share
    with |z| < 3 (agreement within Monte Carlo error) and the range of the sd ratios."""
    if pairs.empty:
        return {"n": 0}
    z = pairs["z"].abs()
    return {"n": int(len(pairs)), "max_abs_z": float(z.max()), "share_abs_z_below_3": float(np.mean(z < 3)),
            "sd_ratio_min": float(pairs["sd_ratio"].min()), "sd_ratio_max": float(pairs["sd_ratio"].max())}


def figures(shown: dict, posteriors: dict, outputs: dict) -> None:
    """Trace and rank plots and autocorrelation of the shown Gibbs fit (with NUTS's beside it
    where it ran), true against estimated, and every method's item means with 90% intervals.
    ``shown``: method -> estimates of the shown fit; ``posteriors``: method -> path of its
    ``posterior.nc`` (see :func:`shown_fit`)."""
    import arviz as az

    from bayesirt import plotting

    idata = {m: az.from_netcdf(p) for m, p in posteriors.items()}
    plotting.save(plotting.gibbs_trace(idata["gibbs"]), outputs["figure_trace"])
    plotting.save(plotting.gibbs_rank(idata["gibbs"]), outputs["figure_rank"])
    plotting.save(plotting.gibbs_autocorrelation(idata), outputs["figure_autocorrelation"])
    # real data: no truth, so the augmented fit is set against the other fit of the same data
    other = next((m for m in ("nuts", "gibbs_omit") if m in shown), None)
    plotting.save(plotting.gibbs_recovery(shown["gibbs"], shown.get(other), other or ""), outputs["figure_recovery"])
    plotting.save(plotting.gibbs_intervals(shown), outputs["figure_intervals"])


def shown_fit(fit_records: list[dict]) -> tuple[str, int]:
    """The condition whose draws the figures show: the first missingness condition with NUTS
    if any (else with the most methods), replication 0."""
    methods: dict[str, set] = {}
    for r in fit_records:
        if r["replication"] == 0:
            methods.setdefault(r["missing"], set()).add(r["method"])
    best = sorted(methods, key=lambda m: (("nuts" not in methods[m]), -len(methods[m]), m))[0]
    return best, 0


# ------------------------------------------------------------------------------- mixture

def simulate_mixture(cfg: dict, seed: int) -> pd.DataFrame:
    """Heights-like data of seed 001's example: ``n_women`` draws from N(mean_women, sd^2) and
    ``n_men`` from N(mean_men, sd^2) (one known sd), shuffled; the group is kept for checking
    only (the sampler never sees it)."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 1]))
    n0, n1, sd = int(cfg["n_women"]), int(cfg["n_men"]), float(cfg["sd"])
    x = np.concatenate([rng.normal(cfg["mean_women"], sd, n0), rng.normal(cfg["mean_men"], sd, n1)])
    group = np.repeat([0, 1], [n0, n1])
    order = rng.permutation(n0 + n1)
    return pd.DataFrame({"height": x[order], "group": group[order]})


def mixture_priors(cfg: dict):
    from bayesirt.inference.gibbs_mixture import MixturePriors

    p = cfg.get("priors", {})
    return MixturePriors(lam=1.0 / float(cfg["sd"]) ** 2, nu=float(p.get("nu", 170.0)), rho=float(p.get("rho", 0.01)),
                         alpha=float(p.get("alpha", 1.0)), beta=float(p.get("beta", 1.0)))


def run_mixture(data: pd.DataFrame, cfg: dict, seed: int):
    """The two-component mixture (known precision 1/sd^2) by ``inference.gibbs_mixture``, with
    the ordering mu_0 < mu_1 imposed after every sweep (label switching; see that module).
    Estimates: pi (weight of component 1, the taller), mu_0, mu_1, with the truth (group
    shares and the generating means)."""
    import jax

    from bayesirt import records
    from bayesirt.inference import gibbs_mixture
    from bayesirt.inference.sampling import sample

    priors = mixture_priors(cfg)
    settings = sampler_settings(cfg.get("sampler"), {"n_chains": 4, "n_warmup": 500, "n_samples": 2000, "chunk": 500})
    k = gibbs_mixture.kernel(data["height"].to_numpy(), priors, where="mixture heights")
    res = sample(jax.random.key(seed), k.init_fn, k.step_fn, k.record_fn, settings, coords=k.coords, dims=k.dims,
                 label=f"{STUDY}/mixture")
    s = res.summary
    s = s[s.parameter.isin(["pi", "mu"])].reset_index(drop=True)
    comp = s["component"].fillna(-1).astype(int).to_numpy() if "component" in s else np.full(len(s), -1)
    est = pd.DataFrame({"parameter": s["parameter"], "item": -1, "person": -1, "scale": "all", "category": comp})
    for col in STATS:
        est[col] = s[col].to_numpy(float)
    share = float(np.mean(data["group"] == 1))
    est["true"] = np.where(est.parameter == "pi", share,
                           np.where(est.category == 0, cfg["mean_women"], cfg["mean_men"]))
    fields = {"model": "gaussian_mixture", "method": "gibbs_mixture", "study": STUDY, "dataset": "heights",
              "condition": "mixture", "replication": 0, "seed": int(seed), "n_persons": int(len(data)), "n_items": 1,
              "priors": asdict(priors), "settings": {"sampler": asdict(settings)}, "n_chains": settings.n_chains,
              "label_switching": "ordering mu_0 < mu_1 imposed by relabelling after every sweep"}
    return records.FitOutput(records.sample_record(res, fields), est, None, res.idata)


def mixture_figure(data: pd.DataFrame, cfg: dict, posterior_path, output) -> None:
    import arviz as az

    from bayesirt import plotting

    fig = plotting.gibbs_mixture_posterior(data, az.from_netcdf(posterior_path), float(cfg["sd"]))
    plotting.save(fig, output)
