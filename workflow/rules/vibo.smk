# vibo (seed 004): amortized VI with a product-of-experts ability encoder against
# non-amortized VI, MML-EAP and NUTS, on simulated 2PL and GRM (RWA-shaped) data with missing responses,
# and on prepared real data sets (a design's `dataset`, e.g. the RWA data by the GRM; no truth).
#   data/processed/vibo/{design}/{missing}/rep{rep}/               data of one condition
#   results/vibo/{design}/{missing}/{method}/blocks/block{block}/  one job: a block of fits
#   results/vibo/{design}/{missing}/{method}/blocks/block{block}/rep{rep}/   one fit
#   results/vibo/{design}/                                         tables and figures


include: "functions/vibo.smk"


# Simulated 2PL or GRM data of a design (complete data shared by a replication's missingness
# conditions), the design's missingness, and the extra cells hidden and scored; for a design that
# names a dataset, that prepared data set split into training and new persons, with the design's
# extra missingness and scored cells (empty truth).
data_job(
    "vibo_simulate",
    folder=VIBO_DATA,
    files={"responses": "responses.parquet", "sidecar": "responses.json", "hidden": "hidden.csv",
           "holdout": "holdout.parquet", "holdout_sidecar": "holdout.json", "truth": "truth.csv"},
    input=vibo_design_dataset,
    params={"design": data_design(vibo_design_config), "score_fraction": vibo_score_fraction,
            "heldout_fraction": vibo_heldout_fraction, "seed": vibo_data_seed, "missing_seed": vibo_missing_seed},
    constraints={"design": vibo_design_pattern()},
    script="vibo_simulate.py",
)

# One method (vibo_one_prior | vibo_prior_per_missing | vibo_seed | vibo_average_seed | mfvi | mml |
# nuts) on a block of a condition's replications (the design's block_size of them): the VIBO
# methods and mean-field VI fitted together as one vectorized program (inference.execution.bulk),
# MML and NUTS one after the other; each replication's recovery, calibration, missing-response
# prediction and held-out log-likelihood evaluated in the job, and its files (with its item and
# person tables and model checks) written to rep{rep}/ in the block's folder, which the rules
# after it read.
block_job(
    "fit_vibo",
    vibo_conditions,
    vibo_block_condition,
    folder="results/vibo/{design}/{missing}/{method}",
    data={name: f"{VIBO_DATA}/{file}" for name, file in (
        ("responses", "responses.parquet"), ("hidden", "hidden.csv"), ("holdout", "holdout.parquet"),
        ("truth", "truth.csv"))},
    seed=vibo_fit_seed,
    # the study's settings with the job's design alone (the script reads them; a rerun trigger)
    params={"study": lambda wildcards: one_design(vibo_config(), wildcards)},
    constraints={"design": vibo_design_pattern(), "method": "|".join(vibo_conditions.METHODS)},
    script="vibo_fit.py",
)

# The fits of a simulated design: recovery, calibration, missing-response prediction, held-out
# log-likelihood and timings, the two missing-data variants side by side, and figures; of a
# real-data design (no truth): the methods against each other (abilities and item parameters of
# every pair of methods, agreement with MML-EAP), missing-response prediction, held-out
# log-likelihood and timings, and the figure.
for _rule, _truth, _files, _figures in (
    ("vibo_tables", True, ("fits", "summary", "variants", "timings"),
     {"figure_accuracy_time": ("timings_accuracy.png", "vibo_accuracy_time.rst"),
      "figure_calibration": ("calibration.png", "vibo_calibration.rst"),
      "figure_variants": ("variants.png", "vibo_variants.rst")}),
    ("vibo_observed_tables", False, ("fits", "summary", "agreement", "timings"),
     {"figure_agreement": ("agreement.png", "vibo_agreement.rst")}),
):
    tables_job(
        _rule,
        folder="results/vibo/{design}",
        files={name: f"{name}.csv" for name in _files},
        figures=_figures,
        category="vibo",
        subcategory="{design}",
        blocks=vibo_fit_blocks,
        params={"fits": vibo_fit_files("fit.json"), "estimates": vibo_fit_files("estimates.csv"),
                **({} if _truth else {"observed": True})},
        constraints={"design": vibo_design_pattern(truth=_truth)},
        script="vibo_tables.py",
    )
