# dcm_bbvi (seed 002): black-box VI for the LCDM against EM, collapsed VI and NUTS.
#   data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/          simulated LCDM data (Q in the sidecar)
#   results/dcm_bbvi/{design}/{missing}/{method}/blocks/block{b}/   one job: a block of fits
#   results/dcm_bbvi/{design}/{missing}/{method}/blocks/block{b}/rep{rep}/   one fit
#   results/dcm_bbvi/                                             tables and figures


include: "functions/dcm_bbvi.smk"


# LCDM responses of a design (seed 002's generator, or the larger 4-attribute one) with MCAR
# missingness at the condition's rate, and the truth.
data_job(
    "dcm_simulate",
    folder=DCM_DATA,
    files={"responses": "responses.parquet", "sidecar": "responses.json", "truth": "truth.csv"},
    params={"spec": dcm_design_spec, "seed": dcm_data_seed},
    constraints={"design": dcm_design_pattern(), "missing": r"mcar\d+"},
    script="dcm_simulate.py",
)

# One optimisation method (em | bbvi | bbvi_cv | collapsed_vi | the seed's runs bbvi_seed*) on a
# block of a condition's replications (the design's block_size of them): the trained ones fitted
# together as one vectorized program (inference.execution.bulk), em one after another; each
# replication is evaluated and model-checked in the job, and its files written to rep{rep}/ in
# the block's folder, which the rules after it read. NUTS on the collapsed LCDM (numpyro), the
# posterior reference for beta and pi, has a rule of its own (its resources differ), fitting a
# block one replication after another, files and model checks alike.
for _rule, _method, _methods in (
    ("fit_dcm_bbvi", "{method}", "|".join(m for m in dcm_conditions.METHODS if m != "nuts")),
    ("fit_dcm_bbvi_nuts", "nuts", None),
):
    block_job(
        _rule,
        dcm_conditions,
        dcm_block_condition,
        folder=f"results/dcm_bbvi/{{design}}/{{missing}}/{_method}",
        data={"responses": f"{DCM_DATA}/responses.parquet", "truth": f"{DCM_DATA}/truth.csv"},
        seed=dcm_fit_seed,
        params={"settings": dcm_fit_settings},
        constraints={"design": dcm_design_pattern(), "missing": r"mcar\d+", **({"method": _methods} if _methods else {})},
        script="dcm_fit.py",
    )


# Every fit of the study: accuracy, recovery, ELBO traces, gradient variance, timings; and the
# oracle's accuracy on every data set (modal profiles at the true parameters).
tables_job(
    "dcm_bbvi_tables",
    folder="results/dcm_bbvi",
    files={name: f"{name}.csv" for name in ("summary", "fits", "profile_accuracy", "gradient_variance", "estimates",
                                             "elbo", "timings", "oracle")},
    figures={"figure_beta": ("beta.png", "dcm_beta.rst"), "figure_elbo": ("elbo.png", "dcm_elbo.rst"),
             "figure_variance": ("gradient_variance.png", "dcm_variance.rst"),
             "figure_accuracy": ("accuracy.png", "dcm_accuracy.rst")},
    category="dcm_bbvi",
    blocks=dcm_fit_blocks,
    input={"responses": dcm_data_files("responses.parquet"), "truths": dcm_data_files("truth.csv")},
    params={"fits": dcm_fit_records, "datasets": dcm_data_sets()},
    constraints={},
    script="dcm_tables.py",
)
