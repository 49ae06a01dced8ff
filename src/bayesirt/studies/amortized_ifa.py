"""Study ``amortized_ifa`` (seed 003): IWAE against IWAVB for multidimensional GRM item factor
analysis.

Designs (one per entry of ``studies.amortized_ifa.designs`` in the config):

* confirmatory, simulated (paper 4.2 normal latent, 4.3 multimodal latent): a new data set per
  replication (``simulate_design``), one fit per method and number R of importance samples,
  recovery against the truth, held-out log-likelihood;
* exploratory (paper 4.1, IPIP-FFM): one data set (simulated, or a prepared real data set with
  its held-out persons), a scree of held-out log-likelihood over numbers of factors P
  (replication 0 of every P) and, at ``repeat_factors``, repeated fits from different seeds
  whose Geomin-rotated estimates are compared with the best-likelihood fit (Table 1).

Each step is a function a workflow rule calls:

    simulate_design(design, seed, heldout_fraction)        -> (train, holdout, truth)
    read_design_data(responses, holdout, truth)            -> (train, holdout, truth | None)
    run_fit(train, holdout, truth, spec, ...)              -> records.FitOutput (record, estimates, loss)
    aggregate_design(records, design, analysis, ...)       -> dict of tidy tables
    write_aggregate(tables, outputs)                       -> CSVs and PNG figures

Estimates of item parameters are point estimates (the decoder's values, MML-like), so their
``sd`` is empty; person rows (``ability``) carry the mean and sd of the fitted q(z | x).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, fields

import numpy as np
import pandas as pd

from bayesirt import io

log = logging.getLogger("bayesirt")

STUDY = "amortized_ifa"
METHODS = ("iwae", "iwavb")
KEYS = ["parameter", "item", "person", "factor", "factor2", "category"]
ITEM_PARAMETERS = ("loading", "intercept", "factor_corr")

# training keys a design may set (bayesirt.inference.training.TrainSettings; the learning
# rates are the methods' own, the decay floor is ``lr_floor`` times them)
TRAINING_KEYS = ("lr_decay_rate", "lr_decay_steps", "lr_floor", "clip_norm", "batch_size", "max_steps",
                 "min_steps", "check_every", "window", "rel_tol", "patience", "progress_every")


# ----------------------------------------------------------------------------- conditions

@dataclass(frozen=True)
class FitSpec:
    """One fit of the study: design, method, number of factors P, importance samples R, replication."""

    design: str
    method: str
    n_factors: int
    n_importance: int
    rep: int

    @property
    def condition(self) -> str:
        return condition_name(self.method, self.n_factors, self.n_importance)


def condition_name(method: str, n_factors: int, n_importance: int) -> str:
    return f"{method}_P{n_factors}_R{n_importance}"


def design_fits(name: str, design: dict, methods=METHODS) -> list[FitSpec]:
    """Every fit of a design (see the module docstring for what is fitted)."""
    specs = []
    reps = range(design["replications"])
    for method in methods:
        for r in design["importance_samples"]:
            if design["analysis"] == "confirmatory":
                p = design_factors(design)
                specs += [FitSpec(name, method, p, r, rep) for rep in reps]
            else:
                scree = sorted(set(design["factors"]) | {design["repeat_factors"]})
                specs += [FitSpec(name, method, p, r, 0) for p in scree]
                specs += [FitSpec(name, method, design["repeat_factors"], r, rep) for rep in reps if rep > 0]
    return specs


def design_factors(design: dict) -> int:
    """P of a confirmatory design: the preset's, or the number of scales of a real data set."""
    if "preset" in design:
        from bayesirt.data.simulate_mgrm import PRESETS

        return int(PRESETS[design["preset"]]["n_factors"])
    return int(design["n_factors"])


def data_replication(design: dict, rep: int) -> int:
    """Confirmatory designs draw new data per replication; exploratory ones refit one data set."""
    return rep if design["analysis"] == "confirmatory" else 0


# ----------------------------------------------------------------------------- data

def simulate_design(design: dict, seed: int, heldout_fraction: float, parameter_seed: int | None = None):
    """Training persons (``n_persons``, as in the paper), held-out persons from the same
    population (``heldout_fraction`` times as many more) and the truth (abilities of the
    training persons only). Returns (train, holdout, truth).

    ``parameter_seed`` fixes the item parameters and factor correlations: the workflow gives
    every replication of a design the same one, so replications differ in persons and
    responses only, as in the paper (one truth, 100 response matrices; eq. 29's MSE is over
    replications of the same parameter)."""
    from bayesirt.data import simulate_mgrm as sm

    n = int(design["n_persons"])
    n_hold = max(int(round(heldout_fraction * n)), 1)
    rm, truth = sm.from_preset(design["preset"], seed, n + n_hold, parameter_seed=parameter_seed,
                               **design.get("simulate", {}))
    attrs = {**rm.attrs, "preset": design["preset"], "n_heldout": n_hold}
    train = io.ResponseMatrix(rm.responses[:n], rm.items, {**attrs, "part": "train"})
    hold = io.ResponseMatrix(rm.responses[n:], rm.items, {**attrs, "part": "holdout"})
    truth = truth[(truth.parameter != "ability") | (truth.person < n)].reset_index(drop=True)
    if rm.attrs.get("latent") == "mixture" and rm.attrs.get("n_factors", 1) > 1:
        truth = _mixture_latent_corr(truth, rm.attrs)
    return train, hold, truth


def _mixture_latent_corr(truth: pd.DataFrame, attrs: dict) -> pd.DataFrame:
    """The simulator's factor_corr of a mixture design is the within-component correlation S;
    a model with a normal prior estimates the latent's overall correlation. With components
    N(mu_k 1, sd^2 S) and weights w_k, Cov = sd^2 S + (sum_k w_k mu_k^2 - (sum_k w_k mu_k)^2) 1 1',
    whose correlation replaces S in the truth (the variances are equal, so no rescaling of loadings)."""
    from bayesirt.data import simulate_mgrm as sm

    w, m = np.asarray(sm.MIXTURE_WEIGHTS), np.asarray(sm.MIXTURE_MEANS)
    between = float(np.sum(w * m ** 2) - np.sum(w * m) ** 2)
    within = sm.MIXTURE_SD ** 2
    truth = truth.copy()
    rows = truth.parameter == "factor_corr"
    truth.loc[rows, "value"] = (within * truth.loc[rows, "value"] + between) / (within + between)
    return truth


def read_design_data(responses, holdout, truth=None):
    """(train, holdout, truth or None) from the files of a design's data."""
    train, hold = io.read_responses(responses), io.read_responses(holdout)
    if [it.name for it in train.items] != [it.name for it in hold.items]:
        raise io.DataFormatError(f"{holdout}: items differ from those of {responses}")
    return train, hold, (pd.read_csv(truth) if truth else None)


# ----------------------------------------------------------------------------- one fit

def method_config(method: str, settings: dict, n_importance: int):
    """IWAEConfig / IWAVBConfig from the design's settings for the method (lists -> tuples)."""
    from bayesirt.inference import iwae, iwavb

    cls = {"iwae": iwae.IWAEConfig, "iwavb": iwavb.IWAVBConfig}.get(method)
    if cls is None:
        raise ValueError(f"unknown method '{method}'; known: {', '.join(METHODS)}")
    allowed = {f.name for f in fields(cls)} - {"n_importance"}
    bad = sorted(set(settings) - allowed)
    if bad:
        raise ValueError(f"config key '{method}': unknown key(s) {bad}; allowed: {sorted(allowed)}")
    kw = {k: tuple(v) if isinstance(v, list) else v for k, v in settings.items()}
    return cls(n_importance=int(n_importance), **kw)


def train_settings(training: dict, learning_rate: float):
    from bayesirt.inference.training import TrainSettings

    t = dict(training)
    bad = sorted(set(t) - set(TRAINING_KEYS))
    if bad:
        raise ValueError(f"config key 'training': unknown key(s) {bad}; allowed: {list(TRAINING_KEYS)}")
    floor = t.pop("lr_floor", 0.1)
    return TrainSettings(learning_rate=learning_rate, min_learning_rate=learning_rate * floor, **t)


def model_structure(rm: io.ResponseMatrix, n_factors: int, analysis: str):
    """Confirmatory: Q-matrix of the data (simulated structure, or one factor per scale),
    positive loadings, correlated factors. Exploratory: every loading free, identity prior."""
    from bayesirt.data import simulate_mgrm as sm
    from bayesirt.models import mgrm

    if analysis == "confirmatory":
        q = sm.q_matrix(rm)
        if q.shape[1] != n_factors:
            raise ValueError(f"confirmatory design: the data have {q.shape[1]} factors, the fit asks for {n_factors}")
        return mgrm.structure(rm.n_categories, n_factors, q, positive_loadings=True)
    return mgrm.structure(rm.n_categories, n_factors, None)


def fit_method(key, method: str, y, st, cfg, settings, label: str):
    """Fit; a fit whose loss becomes non-finite keeps its last good state and says so.
    Returns (FitResult, diverged_at_step or None)."""
    from bayesirt.inference import iwae, iwavb
    from bayesirt.inference.training import FitDivergedError, FitResult

    module = {"iwae": iwae, "iwavb": iwavb}[method]
    t0 = time.perf_counter()
    try:
        return module.fit(key, y, st, cfg, settings, label=label), None
    except FitDivergedError as err:
        log.error("%s: %s", label, err)
        return FitResult(err.last_good, np.asarray(err.losses), max(err.step, 1), False, str(err),
                         time.perf_counter() - t0, 0.0), err.step


def heldout_loglik(key, method: str, params, st, cfg, y_hold, n_samples: int) -> dict:
    """Mean held-out log-likelihood per person with the method's own proposal (paper eq. 27)
    and method-independently: Gauss-Hermite quadrature for P <= 2, else Laplace importance
    sampling (``evaluation.loglik``), so methods are compared on their item parameters alone."""
    import jax

    from bayesirt.evaluation import loglik
    from bayesirt.inference import iwae, iwavb

    k_own, k_lap = jax.random.split(key)
    chunk = min(500, n_samples)
    draw = {"iwae": iwae, "iwavb": iwavb}[method].proposal(params, st, cfg)
    own = loglik.importance_sampled_loglik(k_own, params["model"], st, y_hold, draw, n_samples=n_samples,
                                           sample_chunk=chunk)
    if st.n_factors <= 2:
        indep, how = loglik.quadrature_loglik(params["model"], st, y_hold), "quadrature"
    else:
        indep = loglik.laplace_is_loglik(k_lap, params["model"], st, y_hold, n_samples=n_samples, sample_chunk=chunk)
        how = "laplace_is"
    return {"own_proposal": float(own.mean()), "independent": float(indep.mean()), "independent_method": how}


def person_moments(key, method: str, params, st, cfg, y, n_draws: int, batch: int = 1024):
    """Mean and sd of the fitted q(z | x) per person from ``n_draws`` draws: (N, P), (N, P)."""
    import jax
    import jax.numpy as jnp

    from bayesirt.inference import iwae, iwavb

    draw = {"iwae": iwae, "iwavb": iwavb}[method].proposal(params, st, cfg)

    @jax.jit
    def moments(k, yy):
        z, _ = draw(k, yy, n_draws)
        return z.mean(0), z.std(0)

    means, sds = [], []
    for c, a in enumerate(range(0, y.shape[0], batch)):
        m, s = moments(jax.random.fold_in(key, c), jnp.asarray(y[a:a + batch], jnp.int8))
        means.append(np.asarray(m, np.float64))
        sds.append(np.asarray(s, np.float64))
    return np.concatenate(means), np.concatenate(sds)


def item_estimates(params, st, rm: io.ResponseMatrix, analysis: str, truth=None):
    """Loadings, intercepts and factor correlations (natural scale) and rotation info.

    Exploratory solutions are Geomin-rotated (oblique), reflected, and aligned to the true
    loadings when the truth has the same number of factors (else left in Geomin order)."""
    from bayesirt.evaluation import rotation
    from bayesirt.models import mgrm

    lam = np.asarray(mgrm.loadings(params, st), np.float64)
    corr = np.asarray(mgrm.factor_corr(params, st), np.float64)
    ints = np.asarray(mgrm.intercepts(params, st), np.float64)
    info = {"rotation": None}
    if analysis == "exploratory":
        rot = rotation.geomin(lam)
        lam, corr = rot.loadings, rot.factor_corr
        true_lam = _truth_matrix(truth, "loading", lam.shape) if truth is not None else None
        if true_lam is not None:
            lam, corr, perm, _ = rotation.align(lam, true_lam, corr)
            info = {"rotation": "geomin", "aligned_to": "truth",
                    "congruence_with_truth": rotation.tucker_congruence(lam, true_lam).tolist()}
        else:
            lam, corr, _ = rotation.reflect(lam, corr)
            info = {"rotation": "geomin", "aligned_to": None}
        info["geomin_converged"] = bool(rot.converged)
    return lam, ints, corr, info


def _truth_matrix(truth, parameter, shape):
    d = truth[truth.parameter == parameter]
    if d.empty or d.factor.max() + 1 != shape[1] or d.item.max() + 1 != shape[0]:
        return None
    m = np.zeros(shape)
    m[d.item.to_numpy(), d.factor.to_numpy()] = d.value.to_numpy()
    return m


def estimates_table(rm: io.ResponseMatrix, lam, ints, corr, abilities=None, truth=None) -> pd.DataFrame:
    """Tidy estimates (workflow/schemas/estimates.schema.yaml): parameter, item, item_name,
    person, factor, factor_name, factor2, category, scale, mean, sd[, true]."""
    from bayesirt.data.simulate_mgrm import parameters_table

    ncat = rm.n_categories
    p = lam.shape[1]
    names = rm.attrs.get("factor_names") if p == len(rm.attrs.get("factor_names") or []) else None
    names = names or [f"F{k + 1}" for k in range(p)]
    values = {"loading": lam, "intercept": [ints[j, :ncat[j] - 1] for j in range(rm.n_items)],
              "factor_corr": corr}
    if abilities is not None:
        values["ability"] = abilities[0]
    est = parameters_table(values, item_names=[it.name for it in rm.items], factor_names=names,
                           value_column="mean")
    est["sd"] = np.nan
    if abilities is not None:
        est.loc[est.parameter == "ability", "sd"] = abilities[1].ravel()
    item_scale = np.asarray([it.scale for it in rm.items] + ["all"], dtype=object)
    scale = np.where(est.factor >= 0, est.factor_name, item_scale[est.item.to_numpy()])
    est.insert(est.columns.get_loc("category") + 1, "scale", scale)
    est.loc[est.parameter == "factor_corr", "scale"] = "all"
    if truth is not None:
        t = truth[KEYS + ["value"]].rename(columns={"value": "true"})
        est = est.merge(t, on=KEYS, how="left")
        if est.loc[est.parameter == "intercept", "true"].isna().any():
            raise ValueError("truth table does not cover the intercepts of the fitted items")
    return est


def run_fit(train: io.ResponseMatrix, holdout: io.ResponseMatrix, truth, spec: FitSpec, *, design: dict,
            seed: int, eval_samples: int, posterior_draws: int, dataset: str | None = None):
    """One fit of the study, evaluated: ``records.FitOutput`` with the record, the tidy estimates
    and the loss history (``records.write_fit`` writes them)."""
    import jax

    from bayesirt import records

    analysis = design["analysis"]
    settings_d = design.get(spec.method, {})
    cfg = method_config(spec.method, settings_d, spec.n_importance)
    settings = train_settings(design.get("training", {}), cfg.learning_rate)
    st = model_structure(train, spec.n_factors, analysis)
    k_fit, k_eval, k_post = jax.random.split(jax.random.key(seed), 3)
    label = f"{spec.design} {spec.condition} rep{spec.rep}"
    y = np.asarray(train.responses)
    res, diverged = fit_method(k_fit, spec.method, y, st, cfg, settings, label)

    t0 = time.perf_counter()
    ll = heldout_loglik(k_eval, spec.method, res.params, st, cfg, np.asarray(holdout.responses), eval_samples)
    lam, ints, corr, rot_info = item_estimates(res.params["model"], st, train, analysis, truth)
    abilities = None
    if truth is not None and analysis == "confirmatory" and (truth.parameter == "ability").any():
        abilities = person_moments(k_post, spec.method, res.params, st, cfg, y, posterior_draws)
    estimates = estimates_table(train, lam, ints, corr, abilities, truth)
    eval_seconds = time.perf_counter() - t0

    batch = min(settings.batch_size or train.n_persons, train.n_persons)
    window = min(settings.window, len(res.losses))
    record = {
        "model": "mgrm",
        "method": spec.method,
        "study": STUDY,
        "dataset": dataset or spec.design,
        "design": spec.design,
        "analysis": analysis,
        "condition": spec.condition,
        "replication": spec.rep,
        "n_factors": spec.n_factors,
        "importance_samples": spec.n_importance,
        "seed": seed,
        "n_persons": train.n_persons,
        "n_items": train.n_items,
        "n_heldout": holdout.n_persons,
        "steps": int(res.steps),
        "epochs": float(res.steps * batch / train.n_persons),
        "converged": bool(res.converged),
        "convergence_reason": res.reason,
        "diverged_at_step": diverged,
        "final_loss": float(np.mean(res.losses[-window:])) if window else float("nan"),
        "heldout_loglik": ll,
        "eval_samples": eval_samples,
        "recovery": recovery_metrics(estimates),
        **rot_info,
        "settings": {"training": asdict(settings), "method": asdict(cfg)},
        "versions": io.library_versions(),
        "device": io.device_info(),
        # timings vary run to run; everything outside this field is reproducible bit for bit
        "timing": {"wall_seconds": float(res.wall_seconds), "compile_seconds": float(res.compile_seconds),
                   "eval_seconds": eval_seconds},
    }
    losses = pd.DataFrame({"step": np.arange(1, len(res.losses) + 1), "loss": np.asarray(res.losses)})
    return records.FitOutput(record, estimates, losses)


# ----------------------------------------------------------------------------- evaluation

def recovery_metrics(estimates: pd.DataFrame) -> dict:
    """MSE against the truth per item-parameter type (free loadings only: a confirmatory
    model's fixed zeros are exact), and ability RMSE/correlation; {} without truth."""
    out = {}
    if "true" not in estimates:
        return out
    for par in (*ITEM_PARAMETERS, "ability"):
        d = estimates[(estimates.parameter == par) & estimates["true"].notna()]
        if par == "loading":
            d = d[(d["mean"] != 0) | (d["true"] != 0)]
        if d.empty:
            continue
        err = d["mean"].to_numpy() - d["true"].to_numpy()
        if par == "ability":
            out["ability_rmse"] = float(np.sqrt(np.mean(err ** 2)))
            out["ability_corr"] = float(np.corrcoef(d["mean"], d["true"])[0, 1])
        else:
            out[f"{par}_mse"] = float(np.mean(err ** 2))
    return out


# ----------------------------------------------------------------------------- aggregation

def fit_rows(records: list[dict]):
    """One row per fit (fits.csv) and its timings (timings.csv, the only run-dependent table)."""
    rows, timings = [], []
    for r in records:
        ll = r["heldout_loglik"]
        key = {"method": r["method"], "condition": r["condition"], "n_factors": r["n_factors"],
               "importance_samples": r["importance_samples"], "rep": r["replication"]}
        rows.append({**key, "converged": r["converged"], "steps": r["steps"], "epochs": r["epochs"],
                     "final_loss": r["final_loss"], "loglik_independent": ll["independent"],
                     "loglik_independent_method": ll["independent_method"], "loglik_own_proposal": ll["own_proposal"],
                     **{k: r["recovery"].get(k) for k in ("loading_mse", "intercept_mse", "factor_corr_mse",
                                                          "ability_rmse", "ability_corr")}})
        timings.append({**key, **r["timing"], "seconds_per_step": r["timing"]["wall_seconds"] / max(r["steps"], 1)})
    order = ["method", "n_factors", "importance_samples", "rep"]
    return (pd.DataFrame(rows).sort_values(order, ignore_index=True),
            pd.DataFrame(timings).sort_values(order, ignore_index=True))


def summary_table(fits_df: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and count across replications per method, P and R."""
    value_cols = [c for c in fits_df.columns if c in ("loglik_independent", "loglik_own_proposal") or c.endswith("_mse")
                  or c.startswith("ability_") or c in ("steps", "epochs", "final_loss")]
    value_cols = [c for c in value_cols if fits_df[c].notna().any()]
    g = fits_df.groupby(["method", "n_factors", "importance_samples"], sort=True)
    out = g[value_cols].agg(["mean", "std"])
    out.columns = [f"{c}_{s}" for c, s in out.columns]
    out["n_fits"] = g.size()
    out["n_converged"] = g["converged"].sum()
    return out.reset_index()


def parameter_mse(estimates: dict) -> pd.DataFrame:
    """Paper eq. 29: per parameter, the MSE (and bias) over replications against the truth.

    ``estimates``: {(method, n_factors, importance_samples, rep): DataFrame}. Free loadings only."""
    frames = []
    for (method, p, r, rep), est in estimates.items():
        if "true" not in est:
            continue
        d = est[est.parameter.isin(ITEM_PARAMETERS) & est["true"].notna()]
        d = d[(d.parameter != "loading") | (d["mean"] != 0) | (d["true"] != 0)]
        frames.append(d[KEYS + ["mean", "true"]].assign(method=method, n_factors=p, importance_samples=r, rep=rep))
    if not frames:
        return pd.DataFrame(columns=["method", "n_factors", "importance_samples", *KEYS, "mse", "bias", "n_reps"])
    df = pd.concat(frames, ignore_index=True)
    df["err"] = df["mean"] - df["true"]
    df["sq"] = df["err"] ** 2
    keys = ["method", "n_factors", "importance_samples", *KEYS]
    out = df.groupby(keys, sort=True).agg(mse=("sq", "mean"), bias=("err", "mean"), n_reps=("sq", "size"))
    return out.reset_index()


def latent_tables(estimates: dict, design: dict, truth_attrs: dict):
    """Posterior means of replication 0 (latent.csv) and the true latent marginal density on a
    grid (latent_density.csv), for the figure of the learned latent distribution."""
    from bayesirt.data import simulate_mgrm as sm

    frames = []
    for (method, p, r, rep), est in estimates.items():
        d = est[est.parameter == "ability"]
        if rep != 0 or d.empty:
            continue
        frames.append(d[["person", "factor", "factor_name", "mean", "sd"] + (["true"] if "true" in d else [])]
                      .assign(method=method, importance_samples=r))
    latent = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["person", "factor", "factor_name", "mean", "sd", "true", "method", "importance_samples"])
    x = np.linspace(-4.0, 4.0, 401)
    latent_kind = design.get("simulate", {}).get("latent") or sm.PRESETS.get(design.get("preset"), {}).get("latent",
                                                                                                              "normal")
    if latent_kind == "mixture":
        s = float(truth_attrs.get("latent_scale_divisor", 1.0))
        dens = sum(w * _normal_pdf(x, m / s, sm.MIXTURE_SD / s) for w, m in zip(sm.MIXTURE_WEIGHTS, sm.MIXTURE_MEANS))
    else:
        dens = _normal_pdf(x, 0.0, 1.0)
    density = pd.DataFrame({"x": x, "density": dens, "latent": latent_kind})
    return latent, density


def _normal_pdf(x, m, s):
    return np.exp(-0.5 * ((x - m) / s) ** 2) / (s * np.sqrt(2 * np.pi))


def stability_table(estimates: dict, fits_df: pd.DataFrame, n_factors: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Paper Table 1: for each method, the repeated fits at ``n_factors`` against the one with
    the highest held-out log-likelihood (method-independent estimate): RMSE of the
    Geomin-rotated loadings (after reflection and column alignment to the reference),
    intercepts and factor covariance (off-diagonal), and Tucker congruence.

    Returns (per-repeat rows, one summary row per method: mean and SD over repeats)."""
    from bayesirt.evaluation import rotation

    col = "loglik_independent"
    rows = []
    for method in sorted(set(fits_df.method)):
        f = fits_df[(fits_df.method == method) & (fits_df.n_factors == n_factors)]
        if len(f) < 2:
            continue
        ref_row = f.loc[f[col].idxmax()]
        ref = _matrices(estimates[_key(ref_row)], n_factors)
        low = np.tril_indices(n_factors, -1)
        for _, row in f.iterrows():
            if row["rep"] == ref_row["rep"] and row["importance_samples"] == ref_row["importance_samples"]:
                continue
            lam, ints, corr = _matrices(estimates[_key(row)], n_factors)
            lam, corr, _, _ = rotation.align(lam, ref[0], corr)
            rows.append({"method": method, "importance_samples": int(row["importance_samples"]), "rep": int(row["rep"]),
                         "reference_rep": int(ref_row["rep"]),
                         "loading_rmse": float(np.sqrt(np.mean((lam - ref[0]) ** 2))),
                         "intercept_rmse": float(np.sqrt(np.nanmean((ints - ref[1]) ** 2))),
                         "covariance_rmse": float(np.sqrt(np.mean((corr[low] - ref[2][low]) ** 2))) if n_factors > 1 else 0.0,
                         "mean_congruence": float(rotation.tucker_congruence(lam, ref[0]).mean())})
    per = pd.DataFrame(rows, columns=["method", "importance_samples", "rep", "reference_rep", "loading_rmse",
                                      "intercept_rmse", "covariance_rmse", "mean_congruence"])
    metrics_cols = ["loading_rmse", "intercept_rmse", "covariance_rmse", "mean_congruence"]
    g = per.groupby("method", sort=True)[metrics_cols].agg(["mean", "std"])
    g.columns = [f"{c}_{s}" for c, s in g.columns]
    summary = g.reset_index()
    summary["n_compared"] = per.groupby("method", sort=True).size().to_numpy() if len(per) else []
    return per, summary


def _key(row):
    return (row["method"], int(row["n_factors"]), int(row["importance_samples"]), int(row["rep"]))


def _matrices(est: pd.DataFrame, p: int):
    lam_d = est[est.parameter == "loading"]
    n_items = int(lam_d.item.max()) + 1
    lam = np.zeros((n_items, p))
    lam[lam_d.item.to_numpy(), lam_d.factor.to_numpy()] = lam_d["mean"].to_numpy()
    int_d = est[est.parameter == "intercept"]
    ints = np.full((n_items, int(int_d.category.max())), np.nan)
    ints[int_d.item.to_numpy(), int_d.category.to_numpy() - 1] = int_d["mean"].to_numpy()
    corr = np.eye(p)
    c = est[est.parameter == "factor_corr"]
    corr[c.factor.to_numpy(), c.factor2.to_numpy()] = c["mean"].to_numpy()
    corr[c.factor2.to_numpy(), c.factor.to_numpy()] = c["mean"].to_numpy()
    return lam, ints, corr


def scree_table(fits_df: pd.DataFrame) -> pd.DataFrame:
    """Held-out log-likelihood per person against P (replication 0 of each P), per method."""
    d = fits_df[fits_df.rep == 0]
    cols = ["loglik_independent", "loglik_independent_method", "loglik_own_proposal"]
    return d[["method", "importance_samples", "n_factors", *cols]].sort_values(
        ["method", "importance_samples", "n_factors"], ignore_index=True)


def aggregate_design(record_paths, design: dict, truth_attrs: dict | None = None) -> dict:
    """Every table of one design from its fit folders (record paths ``.../fit.json``)."""
    from pathlib import Path

    records = [io.read_json(p) for p in record_paths]
    estimates = {}
    for path, r in zip(record_paths, records):
        estimates[(r["method"], r["n_factors"], r["importance_samples"], r["replication"])] = pd.read_csv(
            Path(path).parent / "estimates.csv")
    fits_df, timings = fit_rows(records)
    tables = {"fits": fits_df, "timings": timings, "summary": summary_table(fits_df)}
    if design["analysis"] == "confirmatory":
        tables["parameter_mse"] = parameter_mse(estimates)
        tables["latent"], tables["latent_density"] = latent_tables(estimates, design, truth_attrs or {})
    else:
        tables["scree"] = scree_table(fits_df)
        tables["stability"], tables["stability_summary"] = stability_table(estimates, fits_df, design["repeat_factors"])
        ref = {}
        for method in sorted(set(fits_df.method)):
            f = fits_df[(fits_df.method == method) & (fits_df.n_factors == design["repeat_factors"])]
            if len(f):
                ref[method] = estimates[_key(f.loc[f["loglik_independent"].idxmax()])]
        tables["reference_loadings"] = pd.concat(
            [e[e.parameter == "loading"][["item", "item_name", "factor", "mean"]].assign(method=m)
             for m, e in ref.items()], ignore_index=True) if ref else pd.DataFrame(
            columns=["item", "item_name", "factor", "mean", "method"])
    return tables


def write_aggregate(tables: dict, outputs: dict) -> None:
    """Write each table to ``outputs[name]`` (CSV) and draw the design's figures
    (``outputs["figure_<name>"]``). Timings are the only run-dependent files."""
    from bayesirt import plotting

    for name, df in tables.items():
        if name in outputs:
            io.write_table(df, outputs[name])
    fits_df = tables["fits"]
    if "figure_mse" in outputs:
        plotting.save(plotting.mse_boxes(tables["parameter_mse"]), outputs["figure_mse"])
        plotting.save(plotting.latent_density(tables["latent"], tables["latent_density"]), outputs["figure_latent"])
    if "figure_loglik" in outputs:
        plotting.save(plotting.method_boxes(fits_df, ["loglik_independent", "loglik_own_proposal"],
                                            ["held-out log-lik. per person\n(method-independent)",
                                             "held-out log-lik. per person\n(own proposal, eq. 27)"]),
                      outputs["figure_loglik"])
    if "figure_timings" in outputs:
        plotting.save(plotting.method_boxes(tables["timings"], ["wall_seconds"], ["fit time (s)"]),
                      outputs["figure_timings"])
    if "figure_scree" in outputs:
        plotting.save(plotting.scree(tables["scree"]), outputs["figure_scree"])
        plotting.save(plotting.loadings_heatmap(tables["reference_loadings"]), outputs["figure_loadings"])
