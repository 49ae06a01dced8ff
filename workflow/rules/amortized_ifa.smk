# amortized_ifa (seed 003): IWAE against IWAVB for multidimensional GRM item factor analysis.
#   data/processed/amortized_ifa/{design}/rep{rep}/                  simulated data of a design
#   results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/blocks/block{block}/   one job: a block of fits
#   results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/blocks/block{block}/rep{rep}/   one fit
#   results/amortized_ifa/{design}/                                  tables and figures
# The scripts read a design's settings from the validated config (settings.Settings); the
# rules' params name them too, so that Snakemake reruns a job whose settings changed.


include: "functions/amortized_ifa.smk"


rule ifa_simulate:
    # Simulated multidimensional GRM data of a design (seed 003, section 4): training persons,
    # held-out persons from the same population, and the truth.
    output:
        responses="data/processed/amortized_ifa/{design}/rep{rep}/responses.parquet",
        sidecar="data/processed/amortized_ifa/{design}/rep{rep}/responses.json",
        holdout="data/processed/amortized_ifa/{design}/rep{rep}/holdout.parquet",
        holdout_sidecar="data/processed/amortized_ifa/{design}/rep{rep}/holdout.json",
        truth="data/processed/amortized_ifa/{design}/rep{rep}/truth.csv",
    params:
        design=ifa_design_config,
        heldout_fraction=ifa_setting("heldout_fraction"),
        seed=ifa_data_seed,
        parameter_seed=ifa_parameter_seed,
    wildcard_constraints:
        design=ifa_design_pattern(simulated=True),
    log:
        "logs/data/amortized_ifa/{design}/rep{rep}.log",
    conda:
        ENV
    script:
        "../scripts/ifa_simulate.py"


rule fit_amortized_ifa:
    # One method (iwae | iwavb, or a seed-as-written iwae_seed | iwavb_seed) with P factors and R importance samples on a block of a design's
    # replications (the design's block_size of them), fitted together as one vectorized program
    # (inference.execution.bulk), in groups of fits_per_program spread over the job's cores (one worker
    # process per group, as many as the threads Snakemake gives); each replication's held-out
    # log-likelihood and recovery are evaluated in the job, and its files written to rep{rep}/
    # in the block's folder, which the rules after it read.
    input:
        responses=each_fit(ifa_block, ifa_responses),
        holdout=each_fit(ifa_block, ifa_holdout),
        truth=each_fit(ifa_block, ifa_truth),
        person_ids=ifa_fit_person_ids,
    output:
        directory("results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/blocks/block{block}"),
    params:
        design=ifa_design_config,
        dataset=ifa_dataset_name,
        eval_samples=ifa_setting("eval_samples"),
        posterior_draws=ifa_setting("posterior_draws"),
        reps=each_fit(ifa_block, rep_of),
        seeds=each_fit(ifa_block, ifa_fit_seed),
    wildcard_constraints:
        design=ifa_design_pattern(),
        method="iwae_seed|iwavb_seed|iwae|iwavb",
        factors=r"\d+",
        samples=r"\d+",
        block=r"\d+",
    threads: ifa_fit_threads
    log:
        "logs/amortized_ifa/{design}/{method}_P{factors}_R{samples}/block{block}.log",
    conda:
        ENV
    script:
        "../scripts/ifa_fit.py"


rule ifa_confirmatory_tables:
    # Confirmatory designs: every fit against the truth (paper Figures 8-9, 11-12). Input: the
    # blocks' folders; params: the fit records in them (as in ifa_exploratory_tables).
    input:
        blocks=ifa_fit_blocks,
        sidecar=ifa_first_sidecar,
    output:
        fits="results/amortized_ifa/{design}/fits.csv",
        summary="results/amortized_ifa/{design}/summary.csv",
        timings="results/amortized_ifa/{design}/timings.csv",
        parameter_mse="results/amortized_ifa/{design}/parameter_mse.csv",
        latent="results/amortized_ifa/{design}/latent.csv",
        latent_density="results/amortized_ifa/{design}/latent_density.csv",
        figure_mse=report("results/amortized_ifa/{design}/figures/mse.png",
                          caption="../report/ifa_mse.rst", category="amortized_ifa", subcategory="{design}"),
        figure_loglik=report("results/amortized_ifa/{design}/figures/loglik.png",
                             caption="../report/ifa_loglik.rst", category="amortized_ifa", subcategory="{design}"),
        figure_timings=report("results/amortized_ifa/{design}/figures/timings.png",
                              caption="../report/ifa_timings.rst", category="amortized_ifa", subcategory="{design}"),
        figure_latent=report("results/amortized_ifa/{design}/figures/latent.png",
                             caption="../report/ifa_latent.rst", category="amortized_ifa", subcategory="{design}"),
    params:
        design=ifa_design_config,
        fits=ifa_fit_records,
    wildcard_constraints:
        design=ifa_design_pattern("confirmatory"),
    log:
        "logs/amortized_ifa/{design}/tables.log",
    conda:
        ENV
    script:
        "../scripts/ifa_tables.py"


rule ifa_exploratory_tables:
    # Exploratory designs: scree over P (paper Figure 6) and the stability of repeated fits
    # against the best-likelihood one (Table 1).
    input:
        blocks=ifa_fit_blocks,
        sidecar=ifa_first_sidecar,
    output:
        fits="results/amortized_ifa/{design}/fits.csv",
        summary="results/amortized_ifa/{design}/summary.csv",
        timings="results/amortized_ifa/{design}/timings.csv",
        scree="results/amortized_ifa/{design}/scree.csv",
        stability="results/amortized_ifa/{design}/stability.csv",
        stability_summary="results/amortized_ifa/{design}/stability_summary.csv",
        reference_loadings="results/amortized_ifa/{design}/reference_loadings.csv",
        figure_scree=report("results/amortized_ifa/{design}/figures/scree.png",
                            caption="../report/ifa_scree.rst", category="amortized_ifa", subcategory="{design}"),
        figure_loadings=report("results/amortized_ifa/{design}/figures/loadings.png",
                               caption="../report/ifa_loadings.rst", category="amortized_ifa",
                               subcategory="{design}"),
        figure_timings=report("results/amortized_ifa/{design}/figures/timings.png",
                              caption="../report/ifa_timings.rst", category="amortized_ifa", subcategory="{design}"),
    params:
        design=ifa_design_config,
        fits=ifa_fit_records,
    wildcard_constraints:
        design=ifa_design_pattern("exploratory"),
    log:
        "logs/amortized_ifa/{design}/tables.log",
    conda:
        ENV
    script:
        "../scripts/ifa_tables.py"
