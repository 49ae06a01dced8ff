"""Calibration of the item uncertainty a GRM fit reports, at the RWA size (issue: fits you can trust).

Simulated RWA-size data (9,881 persons x 22 items x 9 categories, 2 scales; ``REPLICATIONS``
data sets, seeds from ``DATA_SEED``): the share of items x data sets whose 90% interval of the
discrimination (estimate +- 1.645 sd) covers the truth, for

* ``mml``: marginal ML (``inference.marginal.mml``) with standard errors from the observed information
  (``inference.marginal.mml_information``);
* ``advi``: mean-field ADVI (``studies.grm_advi.fit``, default settings), the ``mean`` and ``sd``
  its tables report: a Laplace approximation of the items' marginal posterior at its mode,
  reached by Newton's method from VI's means (``inference.marginal.grm_laplace``; the record's
  ``item_uncertainty``);
* ``advi_mean_field`` (shown, not a target: the tables keep it as ``vi_mean`` / ``vi_sd`` and
  do not report it as the uncertainty): mean-field VI's own means and sds.

Beside coverage, the RMSE of the estimates against the truth over their mean sd (1 when the sds
are right on average). On the real RWA data (the file named by ``BAYESIRT_RWAS``, default
``../shared/data/RWAS/data.csv`` beside the repository; a simulated stand-in under ``--smoke``
where the file is absent): the median over items of ADVI's sd, and of the Laplace sd, over the
MML standard error, for both.

Targets: coverage in 0.85-0.95 for every method that reports an sd; on the real data, the VI
sds within 20% of the MML standard errors.
"""

import os
import time
from pathlib import Path

import numpy as np

from bayesirt.data import rwa, simulate
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.marginal import mml, mml_information
from bayesirt.models import factorized_grm as fgrm
from bayesirt.studies import grm_advi

ROOT = Path(__file__).resolve().parents[2]
N_PERSONS = 9881
REPLICATIONS = 5
DATA_SEED, FIT_SEED = 20261126, 1
SETTINGS = TrainSettings()
COVERAGE = (0.85, 0.95)
SD_RATIO_TOLERANCE = 0.20
SMOKE = {  # run.py --smoke
    "N_PERSONS": 300,
    "REPLICATIONS": 1,
    "SETTINGS": TrainSettings(max_steps=100, min_steps=50, progress_every=0),
}


def three_fits(rm):
    """Discrimination estimates and sds of MML, of ADVI as reported and of mean-field VI's own,
    and ADVI's record."""
    st = fgrm.structure_of(rm)
    structure = mml.Structure(np.asarray(st.n_categories), np.asarray(st.scale_index))
    fit = mml.fit(None, rm.responses, structure, mml.MMLSettings(max_iter=500, tol=1e-6))
    se = mml_information.standard_errors(rm.responses, fit.discrimination, fit.cuts, structure)
    advi = grm_advi.fit(rm, seed=FIT_SEED, settings=SETTINGS, posterior_draws=500, label="uncertainty_calibration")
    d = advi.estimates[advi.estimates.parameter == "discrimination"].sort_values("item")
    return {
        "mml": (fit.discrimination, se.discrimination),
        "advi": (d["mean"].to_numpy(), d["sd"].to_numpy()),
        "advi_mean_field": (d["vi_mean"].to_numpy(), d["vi_sd"].to_numpy()),
    }, advi.record


def real_file() -> tuple[Path, str]:
    """The real RWA file, and how the result names it (not by its path on this machine)."""
    path = Path(os.environ.get("BAYESIRT_RWAS", ROOT / ".." / "shared" / "data" / "RWAS" / "data.csv"))
    return path, "RWAS/data.csv (the real file)"


def real_ratios(smoke: bool) -> dict:
    path, source = real_file()
    if not path.exists():
        if not smoke:
            raise FileNotFoundError(f"{path}: real RWA file not found; set BAYESIRT_RWAS to RWAS/data.csv")
        rm, _ = simulate.from_preset("rwa", DATA_SEED, N_PERSONS)
        source = "simulated RWA-shaped stand-in"
    else:
        rm = rwa.load(path)
    fits, _ = three_fits(rm)
    mml_se = fits["mml"][1]
    return {
        "data": source,
        "advi_sd_to_mml_se": float(np.median(fits["advi"][1] / mml_se)),
        "mean_field_sd_to_mml_se": float(np.median(fits["advi_mean_field"][1] / mml_se)),
        "advi_to_mml_discrimination_ratio": float(np.median(fits["advi"][0] / fits["mml"][0])),
        "mean_field_to_mml_discrimination_ratio": float(np.median(fits["advi_mean_field"][0] / fits["mml"][0])),
    }


def run() -> dict:
    t0 = time.perf_counter()
    hits = {m: [] for m in ("mml", "advi", "advi_mean_field")}
    errors = {m: [] for m in hits}
    sds = {m: [] for m in hits}
    steps, khats, newton = [], [], []
    for r in range(REPLICATIONS):
        rm, truth = simulate.from_preset("rwa", DATA_SEED + r, N_PERSONS)
        true_a = truth[truth.parameter == "discrimination"].sort_values("item").value.to_numpy()
        fits, record = three_fits(rm)
        steps.append(record["steps"])
        khats.append(record["psis"]["khat"])
        newton.append(record["item_uncertainty"].get("converged", False))
        for m, (estimate, sd) in fits.items():
            hits[m].append(np.abs(estimate - true_a) <= 1.645 * sd)
            errors[m].append(estimate - true_a)
            sds[m].append(sd)
    sim_seconds = time.perf_counter() - t0
    real = real_ratios(smoke=N_PERSONS < 9881)
    out = {
        "sizes": {"persons": N_PERSONS, "items": 22, "categories": 9, "replications": REPLICATIONS},
        "wall_seconds": time.perf_counter() - t0,
        "simulation_seconds": sim_seconds,
        "advi_steps_mean": float(np.mean(steps)),
        "advi_khat": khats,
        "advi_newton_converged": newton,
        "real": real,
    }
    for m in hits:
        out[f"{m}_coverage_90"] = float(np.mean(hits[m]))
        out[f"{m}_rmse_to_sd"] = float(np.sqrt(np.mean(np.square(errors[m]))) / np.nanmean(sds[m]))
    out["real_advi_sd_to_mml_se"] = real["advi_sd_to_mml_se"]
    out["real_mean_field_sd_to_mml_se"] = real["mean_field_sd_to_mml_se"]
    lo, hi = COVERAGE
    met = {
        **{f"{m}_coverage_90": lo <= out[f"{m}_coverage_90"] <= hi for m in ("mml", "advi")},
        "real_advi_sd_to_mml_se": abs(out["real_advi_sd_to_mml_se"] - 1) <= SD_RATIO_TOLERANCE,
    }
    out["targets"] = {"coverage_90": list(COVERAGE), "real_sd_ratio_within": SD_RATIO_TOLERANCE}
    out["targets_detail"] = met
    out["targets_met"] = all(met.values())
    return out
