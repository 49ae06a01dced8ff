# Aggregation of fits into per-study tables and figures.


rule recovery_table:
    # Recovery of the true parameters (simulated data) by every fit of a data set.
    input:
        estimates="results/rb_imputation/{dataset}/reference/estimates.csv",
        record="results/rb_imputation/{dataset}/reference/fit.json",
        loss="results/rb_imputation/{dataset}/reference/loss.csv",
    output:
        table="results/rb_imputation/{dataset}/recovery.csv",
        loss_figure="results/rb_imputation/{dataset}/figures/loss.png",
        scatter_figure="results/rb_imputation/{dataset}/figures/estimates.png",
    log:
        "logs/rb_imputation/{dataset}/recovery.log",
    conda:
        ENV
    script:
        "../scripts/recovery_table.py"


rule rb_comparison:
    # Every objective against the complete-data reference (and the truth on simulated data),
    # over all replications: tidy error table, one summary row per fit, figures.
    input:
        fits=rb_fits,
        imputation=rb_imputation_records,
        reference="results/rb_imputation/{dataset}/reference/estimates.csv",
        reference_record="results/rb_imputation/{dataset}/reference/fit.json",
    output:
        errors="results/rb_imputation/{dataset}/{missing}/errors.csv",
        summary="results/rb_imputation/{dataset}/{missing}/summary.csv",
        aggregate="results/rb_imputation/{dataset}/{missing}/aggregate.csv",
        imputation="results/rb_imputation/{dataset}/{missing}/imputation.csv",
        timings="results/rb_imputation/{dataset}/{missing}/timings.csv",
        loss_figure="results/rb_imputation/{dataset}/{missing}/figures/loss.png",
        discrimination_figure="results/rb_imputation/{dataset}/{missing}/figures/discrimination.png",
        ability_figure="results/rb_imputation/{dataset}/{missing}/figures/abilities.png",
        error_figure="results/rb_imputation/{dataset}/{missing}/figures/errors.png",
    log:
        "logs/rb_imputation/{dataset}/{missing}/comparison.log",
    conda:
        ENV
    script:
        "../scripts/rb_comparison.py"
