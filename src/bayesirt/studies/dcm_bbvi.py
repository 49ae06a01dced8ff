"""Study ``dcm_bbvi`` (seed 002): black-box VI for the LCDM against exact references.

Methods (``METHODS``):
    em            EM marginal maximum likelihood (``inference.dcm_em``), standard errors from the
                  observed information
    bbvi          the seed's BBVI: Rao-Blackwellized score-function gradients, block coordinate ascent
    bbvi_cv       the same with (leave-one-out) control variates
    collapsed_vi  Z summed out, reparameterised gradients, minibatches (``inference.collapsed_vi``)
    nuts          NUTS on the collapsed model (numpyro), the posterior reference

Monotonicity (``monotone: true``, one key for all of ``MONOTONE_METHODS``): em, bbvi, bbvi_cv and
collapsed_vi fit monotone items, main effects >= 0 and interactions >= -min(main effects), all
through ``models.lcdm.monotone_beta``, and report coefficients inside those constraints; NUTS
stays unconstrained (its record says ``monotone: false``).

Designs (``DESIGNS``): ``seed`` (1,000 persons, 30 items, 2 attributes, the generator of the
seeds README) and ``larger`` (2,000 persons, 20 items measuring 1-2 of 4 attributes; intercepts
U(-3, -0.1), main effects U(1, 5); interactions U(-min main effect, 2), so every item stays
monotone in each attribute). Missingness: MCAR at the condition's rate.

The shape of every study:
    conditions(config)                    -> the fits a config asks for (cheap: parse time)
    simulate(design, missing, rep, seed)  -> (ResponseMatrix with -1 for missing, truth, Q)
    run_fit(...)                          -> records.FitOutput (one fit)
    aggregate(fit folders)                -> tidy tables
    figures(tables, folder)               -> PNG files
"""

from __future__ import annotations

import logging
import time
import zlib
from dataclasses import dataclass, field, replace

import jax
import numpy as np
import pandas as pd

from bayesirt import io, records
from bayesirt.data import missingness
from bayesirt.data.simulate_lcdm import simulate_lcdm
from bayesirt.evaluation.recovery import metrics
from bayesirt.inference import bbvi, collapsed_vi, dcm_em
from bayesirt.inference.sampling import SamplerSettings
from bayesirt.inference.training import FitResult, TrainSettings
from bayesirt.models import lcdm
from bayesirt.studies.dcm_conditions import (DESIGNS, METHODS, MONOTONE_METHODS, SEED_ACCURACY, STUDY,  # noqa: F401
                                             FitSpec, conditions, design_spec, missing_label, missing_rate)

log = logging.getLogger("bayesirt")

# BBVI on the seed design: the seed's block schedule (10, 20, 20, 30 steps per sweep), a sweep
# per convergence check
BBVI_TRAIN = TrainSettings(max_steps=4000, min_steps=320, check_every=80, window=160, rel_tol=2e-4,
                           patience=2, lr_decay_steps=500, progress_every=0)
COLLAPSED_TRAIN = TrainSettings(learning_rate=0.05, max_steps=5000, min_steps=300, check_every=100, window=200,
                                rel_tol=1e-4, patience=3, progress_every=0)


@dataclass(frozen=True)
class StudyConfig:
    n_samples: int = 50  # M of BBVI
    bbvi_train: TrainSettings = BBVI_TRAIN
    collapsed_train: TrainSettings = COLLAPSED_TRAIN
    em: dcm_em.EMSettings = dcm_em.EMSettings()
    nuts: SamplerSettings = field(default_factory=lambda: SamplerSettings(n_chains=4, n_warmup=500, n_samples=500,
                                                                          progress_every=0))
    priors: lcdm.Priors = lcdm.Priors()
    variance_repeats: int = 32  # draws of the gradient estimator for its variance (BBVI fits)
    monotone: bool = False  # MONOTONE_METHODS: monotone coefficients (models.lcdm.monotone_beta)


def job_seed(base: int, *parts) -> int:
    """One seed per job from the config seed and the job's wildcards."""
    return int(zlib.crc32("/".join(str(p) for p in (base,) + parts).encode()) % (2 ** 31))


def q_matrix(spec: dict, rng: np.random.Generator) -> np.ndarray | None:
    a, j = spec["n_attributes"], spec["n_items"]
    if spec["q_rows"] == "uniform":
        return None  # the simulator's default: rows uniform over all 2^A patterns
    q = np.zeros((j, a), np.int8)
    for i in range(j):
        q[i, rng.choice(a, size=rng.integers(1, 3), replace=False)] = 1
    q[:a] = np.eye(a, dtype=np.int8)  # every attribute measured, alone, at least once
    return q


def simulate(spec: dict, missing: float, seed: int, n_persons: int | None = None):
    """(ResponseMatrix with -1 for hidden cells, truth table, Q-matrix) for one design."""
    rng = np.random.default_rng(seed)
    n = n_persons or spec["n_persons"]
    rm, truth, q = simulate_lcdm(seed, n_persons=n, n_attributes=spec["n_attributes"], n_items=spec["n_items"],
                                 q_matrix=q_matrix(spec, rng), intercept=spec["intercept"],
                                 main_single=spec["main_single"], main_multi=spec["main_multi"],
                                 interaction=spec["interaction"])
    if missing > 0:
        rm, _ = missingness.inject(rm, kind="mcar", rate=missing, seed=seed + 1)
    return rm, truth, q


# ---------------------------------------------------------------------------------------------
# scoring


def accuracy(profile_prob: np.ndarray, true_profile: np.ndarray, n_attributes: int) -> dict:
    """Pattern accuracy (all attributes right), attribute accuracy (mean over attributes, and per
    attribute), per-profile accuracy (by true profile), from the modal profile of each person."""
    pred = np.asarray(profile_prob).argmax(1)
    prof = lcdm.profiles(n_attributes)
    attr = (prof[pred] == prof[true_profile]).mean(0)
    per_profile = {lcdm.profile_label(c, n_attributes): float((pred[true_profile == c] == c).mean())
                   for c in range(2 ** n_attributes) if (true_profile == c).any()}
    return {"pattern_accuracy": float((pred == true_profile).mean()), "attribute_accuracy": float(attr.mean()),
            "attribute_accuracy_by_attribute": attr.tolist(), "profile_accuracy": per_profile}


def estimates_table(design: lcdm.Design, beta_mean, beta_sd, pi_mean, pi_sd, profile_prob, truth) -> pd.DataFrame:
    """Tidy estimates: beta (item, category = feature position), profile_probability
    (category = profile index), profile_posterior_max (person; mean = modal profile, sd empty)."""
    rows = []
    tb = truth[truth.parameter == "beta"] if truth is not None else None
    for j in range(design.delta.shape[0]):
        k = int(design.n_features[j])
        true = tb[tb.item == j].value.to_numpy() if tb is not None else np.full(k, np.nan)
        rows.append(pd.DataFrame({"parameter": "beta", "item": j, "person": -1, "scale": "all",
                                  "category": np.arange(k), "mean": beta_mean[j, :k], "sd": beta_sd[j, :k],
                                  "true": true}))
    n_prof = len(pi_mean)
    tp = truth[truth.parameter == "profile_probability"].value.to_numpy() if truth is not None else np.full(n_prof, np.nan)
    rows.append(pd.DataFrame({"parameter": "profile_probability", "item": -1, "person": -1, "scale": "all",
                              "category": np.arange(n_prof), "mean": pi_mean, "sd": pi_sd, "true": tp}))
    pred = np.asarray(profile_prob).argmax(1)
    tz = truth[truth.parameter == "profile"].value.to_numpy() if truth is not None else np.full(len(pred), np.nan)
    rows.append(pd.DataFrame({"parameter": "profile", "item": -1, "person": np.arange(len(pred)), "scale": "all",
                              "category": -1, "mean": pred.astype(float), "sd": np.nan, "true": tz}))
    return pd.concat(rows, ignore_index=True)


# ---------------------------------------------------------------------------------------------
# one fit


def _em_as_result(fit: dcm_em.EMResult) -> FitResult:
    return FitResult({}, np.array([-fit.loglik]), max(fit.n_iter, 1), fit.converged, fit.reason, fit.wall_seconds,
                     fit.compile_seconds)


def run_fit(method: str, rm, truth, q, seed: int, config: StudyConfig = StudyConfig(), fields: dict | None = None,
            allow_zero_rows: bool = True) -> records.FitOutput:
    """Fit one method to one data set; the record carries the accuracy figures and (BBVI) the
    gradient variance with and without control variates at the final state."""
    if method not in METHODS:
        raise ValueError(f"dcm_bbvi: unknown method {method!r}; expected one of {', '.join(METHODS)}")
    y = rm.responses
    prob = bbvi.prepare(y, q, allow_zero_rows=allow_zero_rows)
    des = prob.design
    n_attr = q.shape[1]
    key = jax.random.PRNGKey(seed)
    fields = {"model": "lcdm", "method": method, "study": STUDY, "dataset": "simulated", "condition": method,
              "seed": int(seed), "n_persons": int(y.shape[0]), "n_items": int(y.shape[1]),
              "n_attributes": int(n_attr), "missing_rate": float((y < 0).mean()),
              "monotone": bool(config.monotone and method in MONOTONE_METHODS), **(fields or {})}
    losses = idata = None
    extra = {}
    if method == "em":
        fit = dcm_em.fit_em(y, q, config.em._replace(monotone=config.monotone), allow_zero_rows=allow_zero_rows)
        res = _em_as_result(fit)
        nan = np.full_like(fit.beta, np.nan)
        post = np.exp(fit.log_posterior)
        est = estimates_table(des, fit.beta, fit.beta_se if fit.beta_se is not None else nan, np.exp(fit.log_pi),
                              fit.pi_se if fit.pi_se is not None else np.full(len(fit.log_pi), np.nan), post, truth)
        record = records.fit_record(res, fields, window=1)
        record["loglik"] = fit.loglik
        losses = records.loss_table([-fit.loglik])
    elif method in ("bbvi", "bbvi_cv"):
        settings = bbvi.BBVISettings(n_samples=config.n_samples, control_variates=method == "bbvi_cv",
                                     priors=config.priors, monotone=config.monotone)
        fit_key, var_key = jax.random.split(key)
        res = bbvi.fit_bbvi(fit_key, prob, settings, config.bbvi_train, label=method)
        s = bbvi.summarize(res.params, des, key=jax.random.fold_in(key, 2), monotone=config.monotone)
        post = s.profile_prob
        est = estimates_table(des, s.beta_mean, s.beta_sd, s.pi_mean, s.pi_sd, post, truth)
        record = records.fit_record(res, fields, window=config.bbvi_train.window)
        record["elbo"] = -record["final_loss"]
        if config.variance_repeats:
            t0 = time.perf_counter()
            extra["gradient_variance"] = bbvi.gradient_variance(var_key, res.params, prob, settings,
                                                                config.variance_repeats)
            record["timing"]["variance_seconds"] = time.perf_counter() - t0
        losses = records.loss_table(res.losses)
    elif method == "collapsed_vi":
        fit_key, sum_key = jax.random.split(key)
        res = collapsed_vi.fit_collapsed(fit_key, prob, collapsed_vi.CollapsedSettings(priors=config.priors,
                                                                                      monotone=config.monotone),
                                         config.collapsed_train)
        s = collapsed_vi.summarize(sum_key, res.params, prob, monotone=config.monotone)
        post = s.profile_prob
        est = estimates_table(des, s.beta_mean, s.beta_sd, s.pi_mean, s.pi_sd, post, truth)
        record = records.fit_record(res, fields, window=config.collapsed_train.window)
        record["elbo"] = -record["final_loss"]
        losses = records.loss_table(res.losses)
    else:  # nuts
        samp = collapsed_vi.run_collapsed_nuts(key, prob, config.nuts, config.priors)
        idata = samp.idata
        post_beta = np.asarray(idata.posterior["beta"]).reshape(-1, *des.feature_mask.shape) * des.feature_mask
        theta = np.asarray(idata.posterior["theta"]).reshape(-1, des.delta.shape[1] - 1)
        pi = np.exp(np.asarray(jax.nn.log_softmax(np.concatenate([theta, np.zeros((len(theta), 1))], 1))))
        post = np.asarray(collapsed_vi.profile_posterior(post_beta.mean(0), np.log(pi.mean(0)), prob.data["shared"]["delta"],
                                                         prob.data["y_obs"], prob.data["n_obs"]))
        est = estimates_table(des, post_beta.mean(0), post_beta.std(0), pi.mean(0), pi.std(0), post, truth)
        record = records.sample_record(samp, fields)
    if truth is not None:
        true_profile = truth[truth.parameter == "profile"].value.to_numpy().astype(int)
        record["accuracy"] = accuracy(post, true_profile, n_attr)
        b = est[est.parameter == "beta"]
        record["recovery"] = {"beta": metrics(b["mean"], b["true"]),
                              "beta_coverage_95": float(np.mean(np.abs(b["mean"] - b["true"]) <= 1.96 * b["sd"]))
                              if b["sd"].notna().all() else None}
    record.update(extra)
    return records.FitOutput(record, est, losses, idata)


def oracle_accuracy(rm, truth, q) -> dict:
    """Accuracy of the modal posterior profile at the true beta and pi: the ceiling any
    estimator of this data set can be expected to reach (up to chance)."""
    des = lcdm.design(q)
    tb = truth[truth.parameter == "beta"]
    beta = lcdm.pack_beta([tb[tb.item == j].value.to_numpy() for j in range(q.shape[0])], des.delta.shape[2])
    log_pi = np.log(truth[truth.parameter == "profile_probability"].value.to_numpy())
    y_obs, n_obs = lcdm.observed_counts(rm.responses)
    post = collapsed_vi.profile_posterior(np.asarray(beta, np.float32), np.asarray(log_pi, np.float32),
                                          np.asarray(des.delta, np.float32), y_obs, n_obs)
    true_profile = truth[truth.parameter == "profile"].value.to_numpy().astype(int)
    return accuracy(np.asarray(post), true_profile, q.shape[1])


# ---------------------------------------------------------------------------------------------
# the workflow's side: conditions from a config, fits from files, tables and figures


def study_settings(study_config: dict) -> StudyConfig:
    """StudyConfig from the config block (the schema has filled in the defaults)."""
    sc = study_config or {}
    return StudyConfig(
        n_samples=sc.get("n_samples", 50),
        bbvi_train=replace(BBVI_TRAIN, **sc.get("bbvi_training", {})),
        collapsed_train=replace(COLLAPSED_TRAIN, **sc.get("collapsed_training", {})),
        nuts=SamplerSettings(**{"progress_every": 0, **sc.get("nuts", {})}) if sc.get("nuts") else StudyConfig().nuts,
        priors=lcdm.Priors(**sc.get("priors", {})),
        variance_repeats=sc.get("variance_repeats", 32),
        monotone=sc.get("monotone", False))


def fit_spec_fields(spec: FitSpec) -> dict:
    return {"design": spec.design, "condition": f"{spec.missing}/{spec.method}", "replication": spec.rep,
            "dataset": f"{STUDY}_{spec.design}_{spec.missing}"}


def fit_records(paths) -> pd.DataFrame:
    """One row per fit record."""
    rows = []
    for path in paths:
        rec = io.read_json(path)
        design, missing, method = rec["design"], *rec["condition"].split("/")
        acc = rec.get("accuracy", {})
        rows.append({"design": design, "missing": missing, "method": method, "rep": rec.get("replication"),
                     "n_persons": rec["n_persons"], "converged": rec["converged"], "steps": rec["steps"],
                     "wall_seconds": rec["timing"]["wall_seconds"], "compile_seconds": rec["timing"]["compile_seconds"],
                     "pattern_accuracy": acc.get("pattern_accuracy"), "attribute_accuracy": acc.get("attribute_accuracy"),
                     "beta_rmse": rec.get("recovery", {}).get("beta", {}).get("rmse"),
                     "beta_coverage_95": rec.get("recovery", {}).get("beta_coverage_95"),
                     "final_loss": rec.get("final_loss"), "path": str(path)})
    return pd.DataFrame(rows)


def aggregate(paths) -> dict[str, pd.DataFrame]:
    """Tidy tables from fit records (``paths`` of fit.json; the estimates and losses beside them)."""
    from pathlib import Path

    fits = fit_records(paths)
    keys = ["design", "missing", "method"]
    summary = (fits.groupby(keys, sort=False)
               .agg(fits=("rep", "size"), converged=("converged", "mean"),
                    pattern_accuracy=("pattern_accuracy", "mean"), pattern_accuracy_sd=("pattern_accuracy", "std"),
                    attribute_accuracy=("attribute_accuracy", "mean"), beta_rmse=("beta_rmse", "mean"),
                    beta_coverage_95=("beta_coverage_95", "mean"))
               .reset_index())
    profile_rows, variance_rows, beta_rows, loss_rows = [], [], [], []
    for f in fits.itertuples():
        rec = io.read_json(f.path)
        base = {"design": f.design, "missing": f.missing, "method": f.method, "rep": f.rep}
        for label, acc in rec.get("accuracy", {}).get("profile_accuracy", {}).items():
            profile_rows.append({**base, "profile": label, "accuracy": acc})
        for block, v in rec.get("gradient_variance", {}).items():
            variance_rows.append({**base, "block": block, "variance_plain": v["plain"],
                                  "variance_control_variates": v["control_variates"], "reduction": v["reduction"]})
        folder = Path(f.path).parent
        if f.rep == 0:
            est = pd.read_csv(folder / "estimates.csv")
            b = est[est.parameter.isin(["beta", "profile_probability"])].copy()
            b["lower"], b["upper"] = b["mean"] - 1.96 * b["sd"], b["mean"] + 1.96 * b["sd"]
            beta_rows.append(b.assign(**base))
            if (folder / "loss.csv").exists() and f.method != "em":
                loss_rows.append(pd.read_csv(folder / "loss.csv").assign(**base))
    # wall times vary run to run: they go to timings.csv alone, so every other table rebuilds bit for bit
    times = ["wall_seconds", "compile_seconds"]
    tables = {"fits": fits.drop(columns=["path", *times]), "summary": summary,
              "profile_accuracy": pd.DataFrame(profile_rows),
              "gradient_variance": pd.DataFrame(variance_rows, columns=["design", "missing", "method", "rep", "block",
                                                                        "variance_plain", "variance_control_variates",
                                                                        "reduction"]),
              "estimates": pd.concat(beta_rows, ignore_index=True) if beta_rows else pd.DataFrame(),
              "elbo": pd.concat(loss_rows, ignore_index=True) if loss_rows else pd.DataFrame(
                  columns=["step", "loss", "design", "missing", "method", "rep"])}
    tables["timings"] = fits[keys + ["rep", "steps", *times]]
    return tables


def figures(tables: dict, outputs: dict) -> None:
    """The study's figures (PNG) from its tables; ``outputs`` maps figure names to paths."""
    from bayesirt import plotting

    plotting.save(plotting.dcm_beta_intervals(tables["estimates"]), outputs["figure_beta"])
    plotting.save(plotting.dcm_elbo_traces(tables["elbo"]), outputs["figure_elbo"])
    plotting.save(plotting.dcm_gradient_variance(tables["gradient_variance"]), outputs["figure_variance"])
    fig = plotting.dcm_accuracy(tables["summary"], SEED_ACCURACY)
    reps = tables["fits"].groupby(["design", "missing", "method"])["rep"].nunique() if len(tables["fits"]) else None
    if reps is not None:
        n = f"{reps.min()}" if reps.min() == reps.max() else f"{reps.min()} to {reps.max()}"
        fig.suptitle(f"Means over {n} replication{'s' if reps.max() != 1 else ''} per condition and method",
                     fontsize=10)
        fig.tight_layout()
    plotting.save(fig, outputs["figure_accuracy"])
