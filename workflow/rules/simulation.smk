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
