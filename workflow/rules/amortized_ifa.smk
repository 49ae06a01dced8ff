# amortized_ifa (seed 003): IWAE against IWAVB for multidimensional GRM item factor analysis.
#   data/processed/amortized_ifa/{design}/rep{rep}/                  simulated data of a design
#   results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/blocks/block{block}/   one job: a block of fits
#   results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/blocks/block{block}/rep{rep}/   one fit
#   results/amortized_ifa/{design}/                                  tables and figures
# The scripts read a design's settings from the validated config (settings.Settings); the
# rules' params name them too, so that Snakemake reruns a job whose settings changed.


include: "functions/amortized_ifa.smk"


# Simulated multidimensional GRM data of a design (seed 003, section 4): training persons,
# held-out persons from the same population, and the truth.
data_job(
    "ifa_simulate",
    folder="data/processed/amortized_ifa/{design}/rep{rep}",
    files={"responses": "responses.parquet", "sidecar": "responses.json", "holdout": "holdout.parquet",
           "holdout_sidecar": "holdout.json", "truth": "truth.csv"},
    params={"design": data_design(ifa_design_config, ifa_conditions.SIMULATION_KEYS),
            "heldout_fraction": ifa_setting("heldout_fraction"),
            "seed": ifa_data_seed, "parameter_seed": ifa_parameter_seed},
    constraints={"design": ifa_design_pattern(simulated=True)},
    script="ifa_simulate.py",
)

# One method (iwae | iwavb, or a seed-as-written iwae_seed | iwavb_seed) with P factors and R
# importance samples on a block of a design's replications (the design's block_size of them),
# fitted together as one vectorized program (inference.execution.bulk), in groups of
# fits_per_program spread over the job's cores (one worker process per group, as many as the
# threads Snakemake gives); each replication's held-out log-likelihood and recovery are evaluated
# in the job, and its files written to rep{rep}/ in the block's folder, which the rules after it
# read.
block_job(
    "fit_amortized_ifa",
    ifa_conditions,
    ifa_block_condition,
    folder="results/amortized_ifa/{design}/{method}_P{factors}_R{samples}",
    data={"responses": ifa_responses, "holdout": ifa_holdout, "truth": ifa_truth},
    input={"person_ids": ifa_fit_person_ids},
    seed=ifa_fit_seed,
    params={"design": ifa_design_config, "eval_samples": ifa_setting("eval_samples"),
            "posterior_draws": ifa_setting("posterior_draws")},
    constraints={"design": ifa_design_pattern(), "method": "iwae_seed|iwavb_seed|iwae|iwavb", "factors": r"\d+",
                 "samples": r"\d+"},
    threads=ifa_fit_threads,
    script="ifa_fit.py",
)

# Confirmatory designs: every fit against the truth (paper Figures 8-9, 11-12); exploratory
# designs: scree over P (paper Figure 6) and the stability of repeated fits against the
# best-likelihood one (Table 1).
for _analysis, _files, _figures in (
    ("confirmatory", ("fits", "summary", "timings", "parameter_mse", "latent", "latent_density"),
     {"figure_mse": ("mse.png", "ifa_mse.rst"), "figure_loglik": ("loglik.png", "ifa_loglik.rst"),
      "figure_timings": ("timings.png", "ifa_timings.rst"), "figure_latent": ("latent.png", "ifa_latent.rst")}),
    ("exploratory", ("fits", "summary", "timings", "scree", "stability", "stability_summary", "reference_loadings"),
     {"figure_scree": ("scree.png", "ifa_scree.rst"), "figure_loadings": ("loadings.png", "ifa_loadings.rst"),
      "figure_timings": ("timings.png", "ifa_timings.rst")}),
):
    tables_job(
        f"ifa_{_analysis}_tables",
        folder="results/amortized_ifa/{design}",
        files={name: f"{name}.csv" for name in _files},
        figures=_figures,
        category="amortized_ifa",
        subcategory="{design}",
        blocks=ifa_fit_blocks,
        input={"sidecar": ifa_first_sidecar},
        params={"design": ifa_design_config, "fits": ifa_fit_records},
        constraints={"design": ifa_design_pattern(_analysis)},
        script="ifa_tables.py",
    )
