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


rule ifa_confirmatory_tables:
    # amortized_ifa, confirmatory designs: every fit against the truth (paper Figures 8-9, 11-12).
    input:
        fits=ifa_fit_records,
        sidecar=ifa_first_sidecar,
    output:
        fits="results/amortized_ifa/{design}/fits.csv",
        summary="results/amortized_ifa/{design}/summary.csv",
        timings="results/amortized_ifa/{design}/timings.csv",
        parameter_mse="results/amortized_ifa/{design}/parameter_mse.csv",
        latent="results/amortized_ifa/{design}/latent.csv",
        latent_density="results/amortized_ifa/{design}/latent_density.csv",
        figure_mse="results/amortized_ifa/{design}/figures/mse.png",
        figure_loglik="results/amortized_ifa/{design}/figures/loglik.png",
        figure_timings="results/amortized_ifa/{design}/figures/timings.png",
        figure_latent="results/amortized_ifa/{design}/figures/latent.png",
    params:
        design=ifa_design_config,
    wildcard_constraints:
        design=ifa_design_pattern("confirmatory"),
    log:
        "logs/amortized_ifa/{design}/tables.log",
    conda:
        ENV
    script:
        "../scripts/ifa_tables.py"


rule ifa_exploratory_tables:
    # amortized_ifa, exploratory designs: scree over P (paper Figure 6) and the stability of
    # repeated fits against the best-likelihood one (Table 1).
    input:
        fits=ifa_fit_records,
        sidecar=ifa_first_sidecar,
    output:
        fits="results/amortized_ifa/{design}/fits.csv",
        summary="results/amortized_ifa/{design}/summary.csv",
        timings="results/amortized_ifa/{design}/timings.csv",
        scree="results/amortized_ifa/{design}/scree.csv",
        stability="results/amortized_ifa/{design}/stability.csv",
        stability_summary="results/amortized_ifa/{design}/stability_summary.csv",
        reference_loadings="results/amortized_ifa/{design}/reference_loadings.csv",
        figure_scree="results/amortized_ifa/{design}/figures/scree.png",
        figure_loadings="results/amortized_ifa/{design}/figures/loadings.png",
        figure_timings="results/amortized_ifa/{design}/figures/timings.png",
    params:
        design=ifa_design_config,
    wildcard_constraints:
        design=ifa_design_pattern("exploratory"),
    log:
        "logs/amortized_ifa/{design}/tables.log",
    conda:
        ENV
    script:
        "../scripts/ifa_tables.py"
