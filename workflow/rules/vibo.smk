# vibo (seed 004): amortized VI with a product-of-experts ability encoder against
# non-amortized VI, MML-EAP and NUTS, on simulated 2PL and GRM (RWA-shaped) data with missing responses,
# and on prepared real data sets (a design's `dataset`, e.g. the RWA data by the GRM; no truth).
#   data/processed/vibo/{design}/{missing}/rep{rep}/               data of one condition
#   results/vibo/{design}/{missing}/{method}/blocks/block{block}/  one job: a block of fits
#   results/vibo/{design}/{missing}/{method}/blocks/block{block}/rep{rep}/   one fit
#   results/vibo/{design}/                                         tables and figures


include: "functions/vibo.smk"


rule vibo_simulate:
    # Simulated 2PL or GRM data of a design (complete data shared by a replication's missingness
    # conditions), the design's missingness, and the extra cells hidden and scored; for a design
    # that names a dataset, that prepared data set split into training and new persons, with the
    # design's extra missingness and scored cells (empty truth).
    input:
        unpack(vibo_design_dataset),
    output:
        responses="data/processed/vibo/{design}/{missing}/rep{rep}/responses.parquet",
        sidecar="data/processed/vibo/{design}/{missing}/rep{rep}/responses.json",
        hidden="data/processed/vibo/{design}/{missing}/rep{rep}/hidden.csv",
        holdout="data/processed/vibo/{design}/{missing}/rep{rep}/holdout.parquet",
        holdout_sidecar="data/processed/vibo/{design}/{missing}/rep{rep}/holdout.json",
        truth="data/processed/vibo/{design}/{missing}/rep{rep}/truth.csv",
    params:
        design=vibo_design_config,
        score_fraction=vibo_score_fraction,
        heldout_fraction=vibo_heldout_fraction,
        seed=vibo_data_seed,
        missing_seed=vibo_missing_seed,
    wildcard_constraints:
        design=vibo_design_pattern(),
    log:
        "logs/data/vibo/{design}/{missing}/rep{rep}.log",
    conda:
        ENV
    script:
        "../scripts/vibo_simulate.py"


rule fit_vibo:
    # One method (vibo_one_prior | vibo_prior_per_missing | vibo_seed | vibo_average_seed | mfvi |
    # mml | nuts) on a block of a condition's replications (the design's block_size of them):
    # the VIBO methods and mean-field VI fitted
    # together as one vectorized program (inference.execution.bulk), MML and NUTS one after the other;
    # each replication's recovery, calibration, missing-response prediction and held-out
    # log-likelihood evaluated in the job, and its files (with its item and person tables and
    # model checks) written to rep{rep}/ in the block's folder, which the rules after it read.
    input:
        responses=each_fit(vibo_block, "data/processed/vibo/{design}/{missing}/rep{rep}/responses.parquet"),
        hidden=each_fit(vibo_block, "data/processed/vibo/{design}/{missing}/rep{rep}/hidden.csv"),
        holdout=each_fit(vibo_block, "data/processed/vibo/{design}/{missing}/rep{rep}/holdout.parquet"),
        truth=each_fit(vibo_block, "data/processed/vibo/{design}/{missing}/rep{rep}/truth.csv"),
    output:
        directory("results/vibo/{design}/{missing}/{method}/blocks/block{block}"),
    params:
        study=vibo_config(),
        reps=each_fit(vibo_block, rep_of),
        seeds=each_fit(vibo_block, vibo_fit_seed),
    wildcard_constraints:
        design=vibo_design_pattern(),
        method="|".join(vibo_conditions.METHODS),
        block=r"\d+",
    log:
        "logs/vibo/{design}/{missing}/{method}/block{block}.log",
    conda:
        ENV
    script:
        "../scripts/vibo_fit.py"


rule vibo_tables:
    # Every fit of a simulated design: recovery, calibration, missing-response prediction, held-out
    # log-likelihood and timings, the two missing-data variants side by side, and figures.
    # Input: the blocks' folders; params: the fits' files in them.
    input:
        blocks=vibo_fit_blocks,
    output:
        fits="results/vibo/{design}/fits.csv",
        summary="results/vibo/{design}/summary.csv",
        variants="results/vibo/{design}/variants.csv",
        timings="results/vibo/{design}/timings.csv",
        figure_accuracy_time=report("results/vibo/{design}/figures/timings_accuracy.png",
                                    caption="../report/vibo_accuracy_time.rst", category="vibo",
                                    subcategory="{design}"),
        figure_calibration=report("results/vibo/{design}/figures/calibration.png",
                                  caption="../report/vibo_calibration.rst", category="vibo", subcategory="{design}"),
        figure_variants=report("results/vibo/{design}/figures/variants.png",
                               caption="../report/vibo_variants.rst", category="vibo", subcategory="{design}"),
    params:
        fits=vibo_fit_files("fit.json"),
        estimates=vibo_fit_files("estimates.csv"),
    wildcard_constraints:
        design=vibo_design_pattern(truth=True),
    log:
        "logs/vibo/{design}/tables.log",
    conda:
        ENV
    script:
        "../scripts/vibo_tables.py"


rule vibo_observed_tables:
    # Every fit of a real-data design (no truth): the methods against each other (abilities and
    # item parameters of every pair of methods, agreement with MML-EAP), missing-response
    # prediction, held-out log-likelihood and timings, and the figure.
    input:
        blocks=vibo_fit_blocks,
    output:
        fits="results/vibo/{design}/fits.csv",
        summary="results/vibo/{design}/summary.csv",
        agreement="results/vibo/{design}/agreement.csv",
        timings="results/vibo/{design}/timings.csv",
        figure_agreement=report("results/vibo/{design}/figures/agreement.png",
                                caption="../report/vibo_agreement.rst", category="vibo", subcategory="{design}"),
    wildcard_constraints:
        design=vibo_design_pattern(truth=False),
    params:
        fits=vibo_fit_files("fit.json"),
        estimates=vibo_fit_files("estimates.csv"),
        observed=True,
    log:
        "logs/vibo/{design}/tables.log",
    conda:
        ENV
    script:
        "../scripts/vibo_tables.py"
