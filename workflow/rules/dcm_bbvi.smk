# dcm_bbvi (seed 002): black-box VI for the LCDM against EM, collapsed VI and NUTS.
#   data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/          simulated LCDM data (Q in the sidecar)
#   results/dcm_bbvi/{design}/{missing}/{method}/blocks/block{b}/   one job: a block of fits
#   results/dcm_bbvi/{design}/{missing}/{method}/blocks/block{b}/rep{rep}/   one fit
#   results/dcm_bbvi/                                             tables and figures


include: "functions/dcm_bbvi.smk"


rule dcm_simulate:
    # LCDM responses of a design (seed 002's generator, or the larger 4-attribute one) with
    # MCAR missingness at the condition's rate, and the truth.
    output:
        responses="data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/responses.parquet",
        sidecar="data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/responses.json",
        truth="data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/truth.csv",
    params:
        spec=dcm_design_spec,
        seed=dcm_data_seed,
    wildcard_constraints:
        design=dcm_design_pattern(),
        missing=r"mcar\d+",
    log:
        "logs/data/dcm_bbvi/{design}/{missing}/rep{rep}.log",
    conda:
        ENV
    script:
        "../scripts/dcm_simulate.py"


rule fit_dcm_bbvi:
    # One optimisation method (em | bbvi | bbvi_cv | collapsed_vi | the seed's runs bbvi_seed*) on a
    # block of a condition's replications (the design's block_size of them): the trained ones fitted
    # together as one vectorized program (inference.execution.bulk), em one after another; each
    # replication is evaluated and model-checked in the job, and its files written to rep{rep}/
    # in the block's folder, which the rules after it read.
    input:
        responses=each_fit(dcm_block, "data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/responses.parquet"),
        truth=each_fit(dcm_block, "data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/truth.csv"),
    output:
        directory("results/dcm_bbvi/{design}/{missing}/{method}/blocks/block{block}"),
    params:
        settings=dcm_fit_settings,
        reps=each_fit(dcm_block, rep_of),
        seeds=each_fit(dcm_block, dcm_fit_seed),
    wildcard_constraints:
        design=dcm_design_pattern(),
        missing=r"mcar\d+",
        method="em|bbvi|bbvi_cv|collapsed_vi|bbvi_seed|bbvi_beta_truth_seed|bbvi_pi_truth_seed",
        block=r"\d+",
    log:
        "logs/dcm_bbvi/{design}/{missing}/{method}/block{block}.log",
    conda:
        ENV
    script:
        "../scripts/dcm_fit.py"


rule fit_dcm_bbvi_nuts:
    # NUTS on the collapsed LCDM (numpyro), the posterior reference for beta and pi, on a block
    # of a condition's replications, one after another; files and model checks as fit_dcm_bbvi.
    input:
        responses=each_fit(dcm_block, "data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/responses.parquet"),
        truth=each_fit(dcm_block, "data/processed/dcm_bbvi/{design}/{missing}/rep{rep}/truth.csv"),
    output:
        directory("results/dcm_bbvi/{design}/{missing}/nuts/blocks/block{block}"),
    params:
        settings=dcm_fit_settings,
        reps=each_fit(dcm_block, rep_of),
        seeds=each_fit(dcm_block, dcm_fit_seed),
    wildcard_constraints:
        design=dcm_design_pattern(),
        missing=r"mcar\d+",
        block=r"\d+",
    log:
        "logs/dcm_bbvi/{design}/{missing}/nuts/block{block}.log",
    conda:
        ENV
    script:
        "../scripts/dcm_fit.py"


rule dcm_bbvi_tables:
    # Every fit of the study: accuracy, recovery, ELBO traces, gradient variance, timings; and
    # the oracle's accuracy on every data set (modal profiles at the true parameters). Input:
    # the blocks' folders; params: the fit records in them.
    input:
        blocks=dcm_fit_blocks,
        responses=dcm_data_files("responses.parquet"),
        truths=dcm_data_files("truth.csv"),
    output:
        summary="results/dcm_bbvi/summary.csv",
        fits="results/dcm_bbvi/fits.csv",
        profile_accuracy="results/dcm_bbvi/profile_accuracy.csv",
        gradient_variance="results/dcm_bbvi/gradient_variance.csv",
        estimates="results/dcm_bbvi/estimates.csv",
        elbo="results/dcm_bbvi/elbo.csv",
        timings="results/dcm_bbvi/timings.csv",
        oracle="results/dcm_bbvi/oracle.csv",
        figure_beta=report("results/dcm_bbvi/figures/beta.png", caption="../report/dcm_beta.rst",
                           category="dcm_bbvi"),
        figure_elbo=report("results/dcm_bbvi/figures/elbo.png", caption="../report/dcm_elbo.rst",
                           category="dcm_bbvi"),
        figure_variance=report("results/dcm_bbvi/figures/gradient_variance.png",
                               caption="../report/dcm_variance.rst", category="dcm_bbvi"),
        figure_accuracy=report("results/dcm_bbvi/figures/accuracy.png", caption="../report/dcm_accuracy.rst",
                               category="dcm_bbvi"),
    params:
        fits=dcm_fit_records,
        datasets=dcm_data_sets(),
    log:
        "logs/dcm_bbvi/tables.log",
    conda:
        ENV
    script:
        "../scripts/dcm_tables.py"
