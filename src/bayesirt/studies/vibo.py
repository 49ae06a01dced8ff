"""Study ``vibo`` (seed 004): amortized VI with a product-of-experts ability encoder (VIBO)
against non-amortized mean-field VI, MML-EAP and NUTS on simulated IRT data with missing
responses: the binary 2PL (``model: 2pl``, ``data.simulate_binary``) and the graded response
model (``model: grm``) on data shaped like a questionnaire preset (``preset: rwa``: the RWA
scale's 22 items with 9 categories, drawn by ``data.simulate.simulate_factorized_grm``, the
simulator of the rb_imputation and grm_advi studies, as one scale: VIBO's abilities are
unidimensional here). A design that names a ``dataset`` instead (a prepared data set of the
config, e.g. the real RWA data with ``model: grm``) fits those responses, natural missing cells
included (``observed_condition``): it has no truth, so its methods are compared with each other
(``aggregate_observed``: agreement with MML-EAP, hidden-cell prediction, held-out
log-likelihood), and it counts in no claim on accuracy.

A condition is (design, missingness, method, replication). Every replication of a design draws
one complete data set (``simulate_condition``): training persons, new persons from the same
population (held-out log-likelihood, amortized scoring) and the truth. The design's
missingness (``mcar0``, ``mcar20``, ``mnar20``, ...: kind and percent of all cells, through
``data.missingness.inject``) then hides cells of both, and a further ``score_fraction`` of the
training persons' still-observed cells is hidden MCAR and scored (missing-response
prediction). All missingness conditions of a replication share the complete data, and all
methods of a condition share the data and the fit seed. On real data a replication is a
random split of the persons into training and new ones and its own missingness masks.

Methods (``METHODS``): ``vibo_one_prior`` (no expert for a missing response, one prior
expert), ``vibo_prior_per_missing`` (the seed's variant: a prior expert per missing
response), ``mfvi`` (per-person mean-field VI), ``mml`` (marginal ML by quadrature with EAP
abilities: the point-estimate anchor; ``inference.mml`` fits the unidimensional 2PL and GRM
alike, so it runs on both models) and ``nuts`` (the reference posterior; only where a
design sets ``nuts: true``).

The shape of every study:

    conditions(config)                               -> [Condition]   (parse time, plain Python)
    simulate_condition(design, missing, seed, ...)   -> (train, hidden, holdout, truth)
    observed_condition(responses, design, missing, seed, ...) -> the same, truth empty (real data)
    run_fit(train, hidden, holdout, truth, cond, ...) -> records.FitOutput
    aggregate(records, estimates)                    -> dict of tidy tables (aggregate_observed: real data)
    figures(tables, outputs)                         -> PNG figures (observed_figures: real data)
"""

from __future__ import annotations

import time
from dataclasses import asdict

import numpy as np
import pandas as pd

from bayesirt.studies.design_conditions import DesignCondition, parse_missing

STUDY = "vibo"
MODELS = ("2pl", "grm")
METHOD_NAMES = ("vibo_one_prior", "vibo_prior_per_missing", "mfvi", "mml", "nuts")
VIBO_VARIANTS = {"vibo_one_prior": "one_prior", "vibo_prior_per_missing": "prior_per_missing"}
KEYS = ["parameter", "item", "person", "category"]
# estimates of each parameter block, with the axes of its rows (a GRM has cuts instead of difficulties)
AXES = {"discrimination": ("item",), "difficulty": ("item",), "cut": ("item", "category"), "ability": ("person",)}
Z50, Z90 = 0.6744897501960817, 1.6448536269514722


# ----------------------------------------------------------------------------- conditions

class Condition(DesignCondition):
    """One fit of the study."""

    study = STUDY


def design_methods(design: dict, methods) -> list[str]:
    """The study's methods for a design; NUTS only where the design asks for it."""
    return [m for m in methods if m != "nuts" or design.get("nuts", False)]


def conditions(config: dict) -> list[Condition]:
    """Every fit the ``vibo`` block of a config asks for: designs x missingness x methods x
    replications (plain Python, cheap: Snakemake calls it at parse time)."""
    if not config or not config.get("enabled", True):
        return []
    out = []
    for name, design in config["designs"].items():
        for missing in design["missing"]:
            parse_missing(missing)
            for method in design_methods(design, config["methods"]):
                out += [Condition(name, missing, method, rep) for rep in range(design["replications"])]
    return out


def design_model(design: dict) -> str:
    model = design.get("model", "2pl")
    if model not in MODELS:
        raise ValueError(f"vibo model '{model}' is not known; expected one of {list(MODELS)}")
    return model


def grm_shape(preset: str) -> tuple[int, int]:
    """(items, categories) of a GRM design's questionnaire preset (``data.simulate.PRESETS``)."""
    from bayesirt.data.simulate import PRESETS

    if preset not in PRESETS:
        raise ValueError(f"simulation preset '{preset}' is not known; expected one of {sorted(PRESETS)}")
    p = PRESETS[preset]
    return int(sum(p["items_per_scale"])), int(p["n_categories"])


def design_shape(design: dict) -> tuple[int, int]:
    """(training persons, items) of a design: a binary design gives ``n_items``, a GRM design
    takes its items from its ``preset``."""
    if design_model(design) == "grm":
        return int(design["n_persons"]), grm_shape(design["preset"])[0]
    return int(design["n_persons"]), int(design["n_items"])


# ----------------------------------------------------------------------------------- data

def simulate_grm(seed: int, n_persons: int, preset: str):
    """GRM responses shaped like ``preset`` (its items and categories, as one scale) and the
    truth in this study's layout: discrimination (item), cut (item, category k = 1..C-1, on the
    scale of ``models.irt2pl``: P(Y >= k) = sigmoid(a theta - cut_k)) and ability (person).
    The draws are ``data.simulate.simulate_factorized_grm``'s (thresholds tau, cut = a tau)."""
    from bayesirt import tables
    from bayesirt.data.simulate import PRESETS, simulate_factorized_grm
    from bayesirt.models import grm

    n_items, n_categories = grm_shape(preset)
    rm, table = simulate_factorized_grm(seed, n_persons, [n_items], n_categories, scale_names=[preset],
                                        item_prefix=PRESETS[preset].get("item_prefix", "Q"))
    pick = lambda p: table[table.parameter == p].sort_values(["item", "person", "category"])["value"].to_numpy()  # noqa: E731
    a = pick("discrimination")
    base, inc = pick("base_difficulty"), pick("increments").reshape(n_items, n_categories - 2)
    tau = np.asarray(grm.ordered_cuts(base, inc))
    truth = tables.long_table({"discrimination": a, "cut": a[:, None] * tau, "ability": pick("ability")}, AXES,
                              ["item", "person", "category"], "value", start={"category": 1})
    rm.attrs.update({"model": "grm", "preset": preset,
                     "parametrization": "P(Y >= k) = sigmoid(a * theta - cut_k), cut_k = a * tau_k"})
    return rm, truth


def simulate_condition(design: dict, missing: str, seed: int, *, score_fraction: float,
                       heldout_fraction: float, missing_seed: int):
    """Complete data from ``seed`` (shared by a replication's missingness conditions), then the
    condition's missingness from ``missing_seed``. Returns (train, hidden, holdout, truth):
    the training matrix with the design's missing cells and the scored cells set to -1, the
    mask of the scored cells with their true responses (a table person, item, response), the
    new persons with the design's missingness, and the truth of the training persons."""
    from bayesirt import io
    from bayesirt.data.simulate_binary import simulate_binary

    n, j = design_shape(design)
    n_hold = max(int(round(heldout_fraction * n)), 1)
    if design_model(design) == "grm":
        rm, truth = simulate_grm(seed, n + n_hold, design["preset"])
    else:
        rm, truth = simulate_binary(seed, n + n_hold, j, model=design_model(design))
    attrs = {**rm.attrs, "design_missing": missing}
    train = io.ResponseMatrix(rm.responses[:n], rm.items, {**attrs, "part": "train"})
    hold = io.ResponseMatrix(rm.responses[n:], rm.items, {**attrs, "part": "holdout"})
    train, hidden, hold = hide_cells(train, hold, missing, missing_seed=missing_seed, score_fraction=score_fraction)
    truth = truth[(truth.parameter != "ability") | (truth.person < n)].reset_index(drop=True)
    return train, hidden, hold, truth


def hide_cells(train, hold, missing: str, *, missing_seed: int, score_fraction: float):
    """The condition's missingness on a replication's persons, simulated or real alike: the
    design's missingness (``missing``) in the training and the new persons, then a further
    ``score_fraction`` of the training persons' still-observed cells hidden MCAR and scored.
    Returns (train, hidden, hold), ``hidden`` the scored cells with the responses they hid
    (a table person, item, response)."""
    from bayesirt.data.missingness import inject

    kind, rate = parse_missing(missing)
    if rate > 0:
        train = inject(train, kind, rate, seed=missing_seed)[0]
        hold = inject(hold, kind, rate, seed=missing_seed + 1)[0]
    observed_share = float(np.mean(train.responses != -1))
    before = np.asarray(train.responses)
    train, scored = inject(train, "mcar", score_fraction * observed_share, seed=missing_seed + 2)
    rows, cols = np.nonzero(scored)
    hidden = pd.DataFrame({"person": rows, "item": cols, "response": before[rows, cols]})
    return train, hidden, hold


def empty_truth() -> pd.DataFrame:
    """The truth table of a real data set: no rows (real data have no true values)."""
    return pd.DataFrame(columns=["parameter", "item", "person", "category", "value"])


def has_truth(design: dict) -> bool:
    """A simulated design has a truth to recover; a design that names a ``dataset`` has none."""
    return "dataset" not in design


def observed_condition(responses, design: dict, missing: str, seed: int, *, score_fraction: float,
                       heldout_fraction: float, missing_seed: int, where: str):
    """A prepared real data set as one condition of a ``dataset`` design. Persons who answered
    no item are left out (they tell nothing about items or predictions, and the per-person fits
    refuse them; their number is in the attributes). From ``seed`` (one replication, shared by
    its missingness conditions) a random ``heldout_fraction`` of the others is set apart as the
    new persons (held-out log-likelihood, amortized scoring), the rest train; then the
    condition's missingness on top of the natural one (``hide_cells``), the scored cells'
    responses kept. A ``2pl`` design needs binary data (checked, naming the first offending
    item and person). Returns (train, hidden, holdout, truth) as ``simulate_condition`` does,
    with an empty truth."""
    from bayesirt import io

    y = np.asarray(responses.responses)
    if design_model(design) == "2pl":
        from bayesirt.models.twopno import check_binary_responses

        y = check_binary_responses(y, [it.name for it in responses.items], where=where)
    answered = (y != -1).any(axis=1)
    natural_rate = float(np.mean(y == -1))
    y = y[answered]
    n_all = y.shape[0]
    n_hold = int(round(heldout_fraction * n_all))
    if not 1 <= n_hold < n_all - 1:
        raise ValueError(f"{where}: {n_all} persons cannot be split into training and held-out persons with "
                         f"heldout_fraction {heldout_fraction}")
    order = np.random.default_rng(np.random.SeedSequence([int(seed), 4])).permutation(n_all)
    hold_rows, train_rows = np.sort(order[:n_hold]), np.sort(order[n_hold:])
    attrs = {**responses.attrs, "model": design_model(design), "design_missing": missing,
             "natural_missing_rate": natural_rate, "persons_without_responses_left_out": int((~answered).sum())}
    train = io.ResponseMatrix(y[train_rows], list(responses.items), {**attrs, "part": "train"})
    hold = io.ResponseMatrix(y[hold_rows], list(responses.items), {**attrs, "part": "holdout"})
    train, hidden, hold = hide_cells(train, hold, missing, missing_seed=missing_seed, score_fraction=score_fraction)
    return train, hidden, hold, empty_truth()


# ------------------------------------------------------------------------------------ fits

def _settings(training: dict, method_cfg: dict, n_persons: int):
    from bayesirt.inference.training import TrainSettings

    t = {**training, "learning_rate": method_cfg.get("learning_rate", training.get("learning_rate", 0.03))}
    if t.get("batch_size") is not None:
        t["batch_size"] = min(int(t["batch_size"]), n_persons)
    return TrainSettings(**t)


def _scores(probs, truth) -> dict:
    """Accuracy and mean log score of predicted category probabilities (cells, C)."""
    truth = np.asarray(truth, int)
    if truth.size == 0:
        return {"accuracy": float("nan"), "log_score": float("nan"), "n_cells": 0}
    p = np.clip(probs[np.arange(truth.size), truth], 1e-12, 1.0)
    return {"accuracy": float(np.mean(probs.argmax(1) == truth)), "log_score": float(np.mean(np.log(p))),
            "n_cells": int(truth.size)}


def point_items(st, items: dict) -> dict:
    """Unconstrained item values (``models.irt2pl``) at a method's point estimates of the
    constrained ones: ``items`` maps discrimination (J,) and difficulty (J,) or cut (J, C-1)
    to (mean, sd) pairs. Cuts of an item with fewer categories than the widest are filler:
    their gaps are kept positive, and the likelihood never reads them."""
    import jax.numpy as jnp

    out = {}
    if st.model != "1pl":
        out["log_discrimination"] = jnp.log(jnp.asarray(items["discrimination"][0], jnp.float32)).reshape(st.n_items, 1)
    if st.model == "grm":
        cuts = np.asarray(items["cut"][0], np.float64).reshape(st.n_items, -1)
        out["first_cut"] = jnp.asarray(cuts[:, 0], jnp.float32)
        gaps = np.diff(cuts, axis=1)
        out["log_gaps"] = jnp.asarray(np.log(np.where(np.isfinite(gaps) & (gaps > 1e-6), gaps, 1e-6)), jnp.float32)
    else:
        out["difficulty"] = jnp.asarray(items["difficulty"][0], jnp.float32)
    return out


def _heldout(key, st, items: dict, y_hold, n_samples: int) -> float:
    """Mean log p(r_i) per new person at the method's item point estimates (``point_items``):
    one Laplace importance-sampling evaluator for every method and model."""
    from bayesirt.evaluation import person_loglik
    from bayesirt.models import irt2pl

    point = point_items(st, items)
    ll = lambda yb, t: irt2pl.log_lik(yb, t, point, st)  # noqa: E731
    return float(person_loglik.laplace_importance_loglik(key, ll, y_hold, 1, n_samples=n_samples).mean())


def item_estimates(st, posterior: dict) -> dict:
    """The study's item blocks from ``vibo.item_posterior`` (or any dict of (mean, sd) pairs of
    discrimination (J, K), difficulty (J,), cuts (J, C-1)): discrimination (J,) and difficulty
    or cut, each (mean, sd); a 1PL's discriminations are 1 with sd 0."""
    j = st.n_items
    disc = posterior.get("discrimination", (np.ones((j, 1)), np.zeros((j, 1))))
    out = {"discrimination": (np.asarray(disc[0])[:, 0], np.asarray(disc[1])[:, 0])}
    if st.model == "grm":
        out["cut"] = posterior["cuts"]
    else:
        out["difficulty"] = posterior["difficulty"]
    return out


def _category_mask(values, st) -> np.ndarray:
    """``values`` (J, C-1) as a masked array without the cuts an item does not have."""
    values = np.asarray(values, float)
    k = np.arange(values.shape[1])[None, :]
    return np.ma.masked_array(values, mask=k >= (st.categories[:, None] - 1))


def estimates_table(items: dict, ability, truth, st=None) -> pd.DataFrame:
    """Tidy estimates: parameter, item, person, category, mean, sd, true. ``items`` maps
    discrimination (J,) and difficulty (J,) or cut (J, C-1) to (mean, sd) pairs, ``ability`` is
    a (mean, sd) pair of (N,) arrays (sd NaN for point estimates). Cuts are numbered from 1,
    and an item's cuts beyond its own categories (``st``) are left out."""
    from bayesirt import tables

    pairs = {**items, "ability": ability}
    blocks = []
    for which in (0, 1):
        arrays = {}
        for k, v in pairs.items():
            a = np.asarray(v[which], float)
            arrays[k] = _category_mask(a, st) if k == "cut" and st is not None else a
        blocks.append(tables.long_table(arrays, AXES, ["item", "person", "category"], "mean" if which == 0 else "sd",
                                        start={"category": 1}))
    mean, sd = blocks
    mean["sd"] = sd["sd"].to_numpy()
    return tables.attach_truth(mean, truth, KEYS) if truth is not None else mean


def evaluation(est: pd.DataFrame) -> dict:
    """Recovery against the truth and calibration of the ability intervals; nothing for a fit
    of real data (no ``true`` column: there is no truth to recover)."""
    from bayesirt.evaluation.recovery import metrics

    out = {}
    if "true" not in est:
        return out
    for par in ("discrimination", "difficulty", "cut", "ability"):
        d = est[est.parameter == par]
        if d.empty:
            continue
        m = metrics(d["mean"], d["true"])
        out[f"{par}_rmse"], out[f"{par}_corr"] = m["rmse"], m["corr"]
    ab = est[est.parameter == "ability"]
    err, sd = np.abs(ab["mean"] - ab["true"]).to_numpy(), ab["sd"].to_numpy()
    out["coverage_50"] = float(np.mean(err < Z50 * sd))
    out["coverage_90"] = float(np.mean(err < Z90 * sd))
    return out


def run_fit(train, hidden: pd.DataFrame, holdout, truth: pd.DataFrame, cond: Condition, *, study: dict,
            seed: int):
    """One fit, evaluated: recovery, calibration, missing-response prediction on the scored
    cells, held-out log-likelihood of the new persons and the time to score them. On real data
    (an empty ``truth``) recovery and calibration are left out, and the record's ``dataset``
    is the design's data set. Returns ``records.FitOutput`` (``records.write_fit`` writes it)."""
    import jax
    import jax.numpy as jnp

    from bayesirt import io, records
    from bayesirt.inference import mfvi, mml, nuts, vibo
    from bayesirt.inference.sampling import SamplerSettings
    from bayesirt.inference.training import TrainSettings
    from bayesirt.models import irt2pl

    design = study["designs"][cond.design]
    y, y_hold = np.asarray(train.responses), np.asarray(holdout.responses)
    n, j = y.shape
    model = design_model(design)
    st = irt2pl.Structure(model, j, 1, n_categories=tuple(int(c) for c in train.n_categories) if model == "grm" else ())
    priors = irt2pl.ItemPriors(**study.get("priors", {}))  # keys checked by the config schema
    rows, cols, cell_truth = (hidden[c].to_numpy() for c in ("person", "item", "response"))
    k_fit, k_enc, k_pred, k_ll, k_new = jax.random.split(jax.random.key(seed), 5)
    eval_samples = int(study["eval_samples"])
    truth = truth if truth is not None and len(truth) else None  # real data: no truth
    fields = {"model": model, "method": cond.method, "study": STUDY, "dataset": design.get("dataset", cond.design),
              "design": cond.design, "missing": cond.missing, "condition": f"{cond.missing}_{cond.method}",
              "replication": cond.rep, "seed": seed, "n_persons": n, "n_items": j,
              "n_heldout": int(y_hold.shape[0]), "missing_rate": float(np.mean(y == -1))}
    if model == "grm":
        fields["n_categories"] = [int(c) for c in st.categories]
    timing, losses, idata = {}, None, None

    if cond.method in VIBO_VARIANTS or cond.method == "mfvi":
        cfg = study.get("vibo" if cond.method != "mfvi" else "mfvi", {})
        settings = _settings(study["training"], cfg, n)
        if cond.method == "mfvi":
            spec = mfvi.MFVISpec(st, priors)
            res = mfvi.fit(spec, k_fit, y, settings, label=cond.path)
            ab_mean, ab_sd = mfvi.abilities(res.params)
            items, theta = mfvi.ability_draws(res.params, spec, k_pred, int(study["posterior_draws"]))
            probs = vibo.predictive_from_draws(items, theta, st, rows, cols)
            t0 = time.perf_counter()
            mfvi.score_new(res.params, spec, k_new, y_hold,
                           TrainSettings(learning_rate=settings.learning_rate, max_steps=settings.max_steps,
                                         progress_every=0))
            timing["score_new_seconds"] = time.perf_counter() - t0  # a refit of the new persons' q(a)
        else:
            spec = vibo.VIBOSpec(st, priors, missing=VIBO_VARIANTS[cond.method], hidden=tuple(cfg.get("hidden", (16, 16))))
            res = vibo.fit(spec, k_fit, y, settings, label=cond.path)
            ab_mean, ab_sd = vibo.encode(res.params, spec, k_enc, y)
            probs = vibo.predictive_probs(res.params, spec, k_pred, y, rows, cols, n_draws=int(study["posterior_draws"]))
            vibo.encode(res.params, spec, k_new, y_hold)  # compile the encoder for this shape before timing it
            t0 = time.perf_counter()
            vibo.encode(res.params, spec, k_new, y_hold)
            timing["score_new_seconds"] = time.perf_counter() - t0  # the encoder alone, no refit
        items = item_estimates(st, vibo.item_posterior(res.params, spec))
        losses = records.loss_table(res.losses)
        make_record = lambda f: records.fit_record(res, f, window=settings.window, timing=timing)  # noqa: E731
        fields["settings"] = {"training": asdict(settings), "method": cfg}
    elif cond.method == "mml":
        # 41 nodes for the fit, 61 for the person posteriors (with many items a posterior is narrow);
        # the unidimensional GRM by the same quadrature (a 2PL item is a GRM item with 2 categories)
        cats = list(st.categories) if model == "grm" else 2
        res = mml.fit(y, cats, n_nodes=41)
        none = np.full(res.cuts.shape, np.nan)
        items = {"discrimination": (res.discrimination, np.full(j, np.nan))}
        items.update({"cut": (res.cuts, none)} if model == "grm" else {"difficulty": (res.cuts[:, 0], none[:, 0])})
        _, ab_mean, ab_sd = mml.posterior(y, res.discrimination, res.cuts, cats, n_nodes=61)
        probs = mml.predictive_probs(y, res.discrimination, res.cuts, rows, cols, cats, n_nodes=61)
        t0 = time.perf_counter()
        mml.posterior(y_hold, res.discrimination, res.cuts, cats, n_nodes=61)
        timing["score_new_seconds"] = time.perf_counter() - t0  # EAP of the new persons

        def make_record(f):
            return {**f, "steps": res.iterations, "converged": res.converged, "convergence_reason": res.reason,
                    "diverged_at_step": None, "final_loss": res.mean_nll,
                    "versions": io.library_versions(), "device": io.device_info(),
                    "timing": {"wall_seconds": res.wall_seconds, "compile_seconds": 0.0, **timing}}
        losses = records.loss_table(res.loss_history)
    elif cond.method == "nuts":
        ns = study.get("nuts", {})
        settings = SamplerSettings(n_chains=int(ns.get("n_chains", 4)), n_warmup=int(ns.get("n_warmup", 500)),
                                   n_samples=int(ns.get("n_samples", 500)), progress_every=0)
        init = dict(irt2pl.initial_items(y, st), ability=jnp.zeros((n, 1)))
        res = nuts.run_nuts(k_fit, lambda p, data: irt2pl.log_joint(p, data["y"], st, priors), init, settings,
                            data={"y": jnp.asarray(y)}, label=cond.path)
        post = res.idata.posterior
        theta = post["ability"].values  # chain, draw, person, 1
        ab_mean, ab_sd = theta.mean((0, 1)), theta.std((0, 1))
        flat = lambda v: jnp.asarray(v.reshape((-1,) + v.shape[2:]))  # noqa: E731
        draw_items = {k: flat(post[k].values) for k in irt2pl.initial_items(y, st)}
        constrained = jax.vmap(lambda d: irt2pl.constrain(d, st))(draw_items)  # every draw, constrained
        pairs = {k: (np.asarray(v).mean(0), np.asarray(v).std(0)) for k, v in constrained.items()}
        items = item_estimates(st, {"discrimination": pairs["discrimination"],
                                    **({"cuts": pairs["cuts"]} if model == "grm" else {"difficulty": pairs["difficulty"]})})
        probs = vibo.predictive_from_draws(draw_items, flat(theta), st, rows, cols)
        idata = res.idata
        make_record = lambda f: records.sample_record(res, f)  # noqa: E731
        fields["settings"] = {"sampler": asdict(settings)}
    else:
        raise ValueError(f"vibo method '{cond.method}' is not known; expected one of {list(METHOD_NAMES)}")

    est = estimates_table(items, (np.asarray(ab_mean)[:, 0], np.asarray(ab_sd)[:, 0]), truth, st)
    t0 = time.perf_counter()
    fields["evaluation"] = {**evaluation(est),
                            **{f"hidden_{k}": v for k, v in _scores(np.asarray(probs), cell_truth).items()},
                            "heldout_loglik": _heldout(k_ll, st, items, y_hold, eval_samples)}
    timing["eval_seconds"] = time.perf_counter() - t0
    return records.FitOutput(make_record(fields), est, losses, idata)


# ------------------------------------------------------------------------------- tables

def fit_row(record: dict) -> dict:
    """One row of fits.csv from a fit record."""
    t = record["timing"]
    return {"design": record["design"], "model": record.get("model", "2pl"), "missing": record["missing"],
            "method": record["method"],
            "rep": record["replication"], "n_persons": record["n_persons"], "n_items": record["n_items"],
            "missing_rate": record["missing_rate"], "converged": record["converged"], "steps": record["steps"],
            **record["evaluation"], "wall_seconds": t["wall_seconds"], "compile_seconds": t.get("compile_seconds", 0.0),
            "score_new_seconds": t.get("score_new_seconds", np.nan)}


METRICS = ["ability_rmse", "ability_corr", "discrimination_rmse", "difficulty_rmse", "cut_rmse", "coverage_50",
           "coverage_90", "hidden_accuracy", "hidden_log_score", "heldout_loglik", "ability_rmse_to_nuts"]
TIMES = ["wall_seconds", "score_new_seconds"]  # run-dependent: in timings.csv only


def aggregate(fit_records: list[dict], estimates: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Tidy tables of one design from its fits: ``fits`` (one row per fit), ``summary`` (mean
    and sd over replications per missingness x method, with the number of replications),
    ``variants`` (the two VIBO missing-data variants side by side), ``timings`` (the only
    run-dependent table)."""
    fits = pd.DataFrame([fit_row(r) for r in fit_records])
    # recovery against the NUTS posterior means of the same data, where NUTS ran
    nuts_means = {(r["missing"], r["replication"]): e[e.parameter == "ability"]["mean"].to_numpy()
                  for r, e in zip(fit_records, estimates) if r["method"] == "nuts"}
    to_nuts = []
    for r, e in zip(fit_records, estimates):
        ref = nuts_means.get((r["missing"], r["replication"]))
        m = e[e.parameter == "ability"]["mean"].to_numpy()
        to_nuts.append(float(np.sqrt(np.mean((m - ref) ** 2))) if ref is not None else np.nan)
    fits["ability_rmse_to_nuts"] = to_nuts
    fits = fits.sort_values(["missing", "method", "rep"], kind="stable").reset_index(drop=True)
    summary = _summary(fits, METRICS)
    cols = ["ability_rmse", "ability_corr", "coverage_90", "hidden_accuracy", "hidden_log_score", "heldout_loglik",
            "missing_rate"]
    v = fits[fits.method.isin(list(VIBO_VARIANTS))]
    variants = v.pivot_table(index=["design", "missing", "rep"], columns="method", values=cols).reset_index()
    variants.columns = ["_".join(c for c in col if c) if isinstance(col, tuple) else col for col in variants.columns]
    return {"fits": _stable(fits), "summary": summary, "variants": variants, "timings": _timings(fits)}


def _summary(fits: pd.DataFrame, metrics) -> pd.DataFrame:
    """Mean and sd over replications of ``metrics`` (those present: a GRM design has cuts, a
    binary one difficulties) per design x missingness x method, with the number of replications
    and the share of converged fits."""
    group = fits.groupby(["design", "missing", "method"], sort=True)
    metrics = [m for m in metrics if m in fits]
    summary = group[metrics].mean().add_suffix("_mean").join(group[metrics].std().add_suffix("_sd"))
    summary.insert(0, "replications", group.size())
    summary.insert(1, "converged", group["converged"].mean())
    return summary.reset_index()


def _timings(fits: pd.DataFrame) -> pd.DataFrame:
    return fits[["design", "missing", "method", "rep", "steps", "wall_seconds", "compile_seconds",
                 "score_new_seconds"]]


def _stable(fits: pd.DataFrame) -> pd.DataFrame:
    """fits.csv without the run-dependent times (those are in timings.csv)."""
    return fits.drop(columns=["wall_seconds", "compile_seconds", "score_new_seconds"])


# real data (a design that names a dataset): no truth, so the methods are set against each other
REFERENCE = "mml"
AGREEMENT_PARAMETERS = ("ability", "discrimination", "difficulty", "cut")
AGREEMENT_COLUMNS = ["design", "missing", "rep", "method", "other", "parameter", "n", "corr", "rmsd",
                     "mean_difference"]
OBSERVED_METRICS = ["hidden_accuracy", "hidden_log_score", "heldout_loglik"] + [
    f"{p}_{m}_to_{REFERENCE}" for p in AGREEMENT_PARAMETERS for m in ("corr", "rmsd")]


def agreement_table(fit_records: list[dict], estimates: list[pd.DataFrame]) -> pd.DataFrame:
    """Every pair of methods fitted to the same data (one design, missingness condition and
    replication), per parameter block (abilities, discriminations, difficulties or cuts): the
    number of values, the Pearson correlation of the two methods' point estimates (posterior
    means; MML's estimates and EAP abilities), their root mean squared difference and the mean
    difference (``method`` minus ``other``). Methods in ``METHOD_NAMES`` order."""
    by_data: dict = {}
    for r, e in zip(fit_records, estimates):
        by_data.setdefault((r["design"], r["missing"], r["replication"]), {})[r["method"]] = e
    rows = []
    for (design, missing, rep), fits in sorted(by_data.items()):
        methods = [m for m in METHOD_NAMES if m in fits]
        for i, a in enumerate(methods):
            for b in methods[i + 1:]:
                both = fits[a][KEYS + ["mean"]].merge(fits[b][KEYS + ["mean"]], on=KEYS, suffixes=("_a", "_b"))
                for par in AGREEMENT_PARAMETERS:
                    d = both[both.parameter == par]
                    if d.empty:
                        continue
                    x, y = d["mean_a"].to_numpy(float), d["mean_b"].to_numpy(float)
                    varies = len(x) > 1 and x.std() > 0 and y.std() > 0
                    rows.append({"design": design, "missing": missing, "rep": rep, "method": a, "other": b,
                                 "parameter": par, "n": len(x),
                                 "corr": float(np.corrcoef(x, y)[0, 1]) if varies else np.nan,
                                 "rmsd": float(np.sqrt(np.mean((x - y) ** 2))), "mean_difference": float(np.mean(x - y))})
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def aggregate_observed(fit_records: list[dict], estimates: list[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Tidy tables of one real-data design (no truth) from its fits: ``fits`` (one row per fit,
    with each method's agreement with MML-EAP on the same data: ``ability_corr_to_mml``,
    ``cut_rmsd_to_mml``, ...), ``summary`` (mean and sd over replications of the hidden-cell
    accuracy and log score, the held-out log-likelihood and the agreement with MML-EAP, per
    missingness x method), ``agreement`` (every pair of methods, per replication and parameter
    block: ``agreement_table``) and ``timings``. No recovery, calibration or variants table:
    those need a truth."""
    fits = pd.DataFrame([fit_row(r) for r in fit_records])
    agreement = agreement_table(fit_records, estimates)
    to_ref = agreement[(agreement.method == REFERENCE) | (agreement.other == REFERENCE)]
    to_ref = to_ref.assign(method=np.where(to_ref.method == REFERENCE, to_ref.other, to_ref.method))
    for par in AGREEMENT_PARAMETERS:
        d = to_ref[to_ref.parameter == par].set_index(["design", "missing", "rep", "method"])
        if d.empty:
            continue
        index = pd.MultiIndex.from_frame(fits[["design", "missing", "rep", "method"]])
        for stat in ("corr", "rmsd"):
            fits[f"{par}_{stat}_to_{REFERENCE}"] = d[stat].reindex(index).to_numpy()
    fits = fits.sort_values(["missing", "method", "rep"], kind="stable").reset_index(drop=True)
    return {"fits": _stable(fits), "summary": _summary(fits, OBSERVED_METRICS), "agreement": agreement,
            "timings": _timings(fits)}


def observed_figures(tables: dict, outputs: dict) -> None:
    """Agreement with MML-EAP and hidden-cell prediction of a real-data design (PNG)."""
    from bayesirt import plotting

    reps = tables["summary"]["replications"]
    fig = plotting.vibo_agreement(tables["summary"], reference=REFERENCE)
    fig.suptitle(f"Means over {int(reps.min())} to {int(reps.max())} missingness masks per condition and method"
                 if reps.min() != reps.max() else
                 f"Means over {int(reps.min())} missingness mask{'s' if reps.max() != 1 else ''} per condition "
                 "and method", fontsize=10)
    fig.tight_layout()
    plotting.save(fig, outputs["figure_agreement"])


def with_times(summary: pd.DataFrame, timings: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with the mean fit and scoring times per condition from ``timings`` (kept out of
    summary.csv, so that every table but timings.csv is the same bit for bit on a rerun)."""
    keys = ["design", "missing", "method"]
    means = timings.groupby(keys, sort=True)[TIMES].mean().add_suffix("_mean").reset_index()
    return summary.merge(means, on=keys, how="left")


def figures(tables: dict, outputs: dict) -> None:
    """accuracy versus time, calibration and the two missing-data variants (PNG)."""
    from bayesirt import plotting

    timed = with_times(tables["summary"], tables["timings"])
    reps = tables["summary"]["replications"]
    n = f"{int(reps.min())}" if reps.min() == reps.max() else f"{int(reps.min())} to {int(reps.max())}"
    title = f"Means over {n} replication{'s' if reps.max() != 1 else ''} per condition and method"
    for fig, name in ((plotting.vibo_accuracy_time(timed), "figure_accuracy_time"),
                      (plotting.vibo_calibration(tables["summary"]), "figure_calibration"),
                      (plotting.vibo_variants(tables["summary"]), "figure_variants")):
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        plotting.save(fig, outputs[name])


def claim_verdicts(fits: pd.DataFrame, timings: pd.DataFrame, vibo_method: str = "vibo_one_prior") -> list[dict]:
    """The report's claims on VIBO, each judged on paired replications (``evaluation.verdicts``;
    a pair is one design, missingness condition and replication: every method fitted to the
    same data). One {"claim", "verdict"} per claim that the fits can judge:

    * fast: NUTS takes at least 50 times VIBO's time (log time ratio above log 50), where NUTS ran;
    * accurate: VIBO's ability RMSE at most 5% above the reference's (NUTS where it ran, else MML-EAP);
    * robust: from the least to the most MCAR missingness, VIBO's ability RMSE grows at most
      0.01 more than MML-EAP's (a pair is one design and replication here);
    * MNAR stress: from R% MCAR to R% MNAR (same rate, non-ignorable), VIBO's ability RMSE grows
      at most 0.01 more than MML-EAP's, for each R at which a design has both;
    * the two missing-data variants: the one-prior variant's 90% ability intervals are closer
      to their nominal coverage than the seed's prior-per-missing variant's (|coverage − 0.90|
      lower), on the conditions with missing responses.

    Fits of real data (no ``ability_rmse``: no truth) count in none of the claims but the
    first, which needs no truth.
    """
    from bayesirt.evaluation import verdicts

    units = ["design", "missing", "rep"]
    out = []
    # real-data designs have no truth (no ability RMSE, no coverage): left out of every claim on accuracy
    fits = fits[fits["ability_rmse"].notna()] if "ability_rmse" in fits else fits.iloc[:0]
    if (timings["method"] == "nuts").any():
        t = timings.assign(log_seconds=np.log(timings["wall_seconds"]))
        d = verdicts.paired_differences(t, "log_seconds", claimed="nuts", baseline=vibo_method, units=units)
        out.append({"claim": "VIBO at least 50 times faster than NUTS", "verdict": verdicts.paired_verdict(
            d - np.log(50.0), direction="higher", subject="log(NUTS time / VIBO time) − log 50")})
    if fits.empty:
        return out
    ref = "nuts" if (fits["method"] == "nuts").any() else "mml"
    piv = fits.pivot_table(index=units, columns="method", values="ability_rmse")
    if {vibo_method, ref} <= set(piv.columns):
        rel = (piv[vibo_method] / piv[ref] - 1.0).dropna()
        out.append({"claim": f"VIBO's ability RMSE within 5% of {ref.upper()}'s", "verdict": verdicts.paired_verdict(
            rel, direction="lower", margin=0.05, subject=f"VIBO's ability RMSE relative to {ref.upper()}'s (ratio − 1)")})
    kinds = {m: parse_missing(m) for m in fits["missing"].unique()}
    mcar = sorted((m for m, (kind, _) in kinds.items() if kind == "mcar"), key=lambda m: kinds[m][1])
    pairs = [(mcar[0], mcar[-1], "")] if len(mcar) > 1 else []
    same_rate = {rate: m for m, (kind, rate) in kinds.items() if kind == "mcar"}
    pairs += [(same_rate[rate], m, " under MNAR") for m, (kind, rate) in sorted(kinds.items())
              if kind == "mnar" and rate in same_rate]
    for lo, hi, what in pairs:
        growth = _rmse_growth(fits, lo, hi, (vibo_method, "mml"))
        if growth is not None:
            out.append({"claim": f"VIBO no less robust to missing data{what} than MML-EAP ({lo} to {hi})",
                        "verdict": verdicts.paired_verdict(
                            growth, direction="lower", margin=0.01,
                            subject=f"the growth of VIBO's ability RMSE from {lo} to {hi} beyond MML-EAP's")})
    variants = list(VIBO_VARIANTS)
    if "coverage_90" in fits and set(variants) <= set(fits["method"]):
        missing = fits[fits["missing"].map(lambda m: kinds[m][1] > 0)]
        gap = missing.assign(gap=(missing["coverage_90"] - 0.9).abs())
        d = verdicts.paired_differences(gap, "gap", claimed=variants[0], baseline=variants[1], units=units)
        out.append({"claim": "One prior expert gives better calibrated ability intervals than a prior expert per "
                             "missing response", "verdict": verdicts.paired_verdict(
                    d, direction="lower", subject="|90% coverage − 0.90| of one prior expert minus that of a prior "
                                                  "expert per missing response")})
    return out


def _rmse_growth(fits: pd.DataFrame, lo: str, hi: str, methods) -> pd.Series | None:
    """Per (design, rep): the growth of the first method's ability RMSE from missingness ``lo``
    to ``hi`` minus the second's; None when either method lacks either condition."""
    p = fits[fits["missing"].isin([lo, hi])].pivot_table(index=["design", "rep"], columns=["method", "missing"],
                                                           values="ability_rmse")
    growth = {m: p[(m, hi)] - p[(m, lo)] for m in methods if (m, hi) in p and (m, lo) in p}
    if len(growth) < 2:
        return None
    return (growth[methods[0]] - growth[methods[1]]).dropna()


def mechanism_table(summary: pd.DataFrame) -> pd.DataFrame:
    """MCAR and MNAR at the same rate side by side: per design, rate and method, the mean
    ability RMSE, 90% coverage and hidden-cell log score under each mechanism and the change
    (MNAR − MCAR). Only rates at which a design has both mechanisms."""
    cols = ["ability_rmse_mean", "coverage_90_mean", "hidden_log_score_mean"]
    kinds = summary["missing"].map(parse_missing)
    s = summary.assign(mechanism=kinds.map(lambda k: k[0]), rate=kinds.map(lambda k: round(100 * k[1], 6)))
    s = s[s["mechanism"].isin(["mcar", "mnar"])]
    wide = s.pivot_table(index=["design", "rate", "method"], columns="mechanism", values=cols)
    if wide.empty or "mnar" not in wide.columns.get_level_values(1) or "mcar" not in wide.columns.get_level_values(1):
        return pd.DataFrame(columns=["design", "rate", "method"])
    out = pd.DataFrame(index=wide.index)
    for c in cols:
        name = c.removesuffix("_mean")
        out[f"{name}_mcar"], out[f"{name}_mnar"] = wide[(c, "mcar")], wide[(c, "mnar")]
        out[f"{name}_change"] = out[f"{name}_mnar"] - out[f"{name}_mcar"]
    both = out["ability_rmse_mcar"].notna() & out["ability_rmse_mnar"].notna()
    return out[both].reset_index()
