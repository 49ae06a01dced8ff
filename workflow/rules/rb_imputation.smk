# rb_imputation (seed 000): a factorized GRM fitted by mean-field ADVI on responses with hidden
# cells, each imputation objective against the complete-data reference.
#   results/rb_imputation/{dataset}/reference/                    complete-data fit
#   results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/ pairwise ordinal stacking model
#   results/rb_imputation/{dataset}/{missing}/{condition}/blocks/block{block}/   one job: a block of fits
#   results/rb_imputation/{dataset}/{missing}/{condition}/blocks/block{block}/rep{rep}/   one objective's fit
#   results/rb_imputation/{dataset}/{missing}/                    comparison tables and figures
# One folder per fit: fit.json, estimates.csv, loss.csv, posterior.nc (and, factorized GRM,
# items.csv and persons.csv: the objectives' fits write them in their block's job, the
# reference's rule rb_irt_tables).


include: "functions/rb_imputation.smk"


rule fit_reference:
    # The complete-data reference: factorized GRM, mean-field ADVI.
    input:
        responses="data/processed/{dataset}/responses.parquet",
        truth=truth_of,
    output:
        record="results/rb_imputation/{dataset}/reference/fit.json",
        estimates="results/rb_imputation/{dataset}/reference/estimates.csv",
        loss="results/rb_imputation/{dataset}/reference/loss.csv",
        posterior="results/rb_imputation/{dataset}/reference/posterior.nc",
    params:
        settings=rb_reference_settings,
        seed=reference_seed,
    log:
        "logs/rb_imputation/{dataset}/reference.log",
    conda:
        ENV
    script:
        "../scripts/fit_reference.py"


rule fit_imputation_model:
    # The pairwise ordinal stacking model (seed 000, section 4), fitted on the responses left
    # after missingness injection, checked, and scored on the hidden cells.
    input:
        responses="data/processed/{dataset}/missing/{missing}/rep{rep}/responses.parquet",
        hidden="data/processed/{dataset}/missing/{missing}/rep{rep}/hidden.parquet",
        complete="data/processed/{dataset}/responses.parquet",
    output:
        model="results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/model.npz",
        record="results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/imputation.json",
        submodels="results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/submodels.csv",
    params:
        settings=rb_setting("stacking"),
        seed=imputation_seed,
    log:
        "logs/rb_imputation/{dataset}/{missing}/rep{rep}/imputation.log",
    conda:
        ENV
    script:
        "../scripts/fit_imputation_model.py"


# One imputation objective (condition = objective, or objective_M<copies>) on a block of the
# study's replications (block_size of them, the independent masks), fitted together as one
# vectorized program (inference.execution.bulk); each replication's files (and its item and
# person tables, factorized GRM) are written to rep{rep}/ in the block's folder, which the rules
# after it read.
block_job(
    "fit_objective",
    rb_study,
    rb_block_condition,
    folder="results/rb_imputation/{dataset}/{missing}/{condition}",
    data={"responses": rb_masked_responses, "imputation": rb_imputation_model},
    input={"truth": truth_of, "person_ids": rb_person_ids},
    seed=replication_seed,
    params={"settings": rb_fit_settings, "tables": lambda wildcards: rb_tables()},
    constraints={},
    script="fit_objective.py",
)


rule recovery_table:
    # Recovery of the true parameters (simulated data) by the complete-data fit; on real data
    # its estimates item by item.
    input:
        estimates="results/rb_imputation/{dataset}/reference/estimates.csv",
        record="results/rb_imputation/{dataset}/reference/fit.json",
        loss="results/rb_imputation/{dataset}/reference/loss.csv",
    output:
        table="results/rb_imputation/{dataset}/recovery.csv",
        loss_figure=report("results/rb_imputation/{dataset}/figures/loss.png",
                           caption="../report/rb_reference_loss.rst", category="rb_imputation",
                           subcategory="{dataset}: complete-data reference"),
        scatter_figure=report("results/rb_imputation/{dataset}/figures/estimates.png",
                              caption="../report/rb_reference_estimates.rst", category="rb_imputation",
                              subcategory="{dataset}: complete-data reference"),
    log:
        "logs/rb_imputation/{dataset}/recovery.log",
    conda:
        ENV
    script:
        "../scripts/recovery_table.py"


# Every objective against the complete-data reference (and the truth on simulated data), over
# all replications: tidy error table, one summary row per fit, figures.
tables_job(
    "rb_comparison",
    folder="results/rb_imputation/{dataset}/{missing}",
    files={name: f"{name}.csv" for name in ("errors", "summary", "aggregate", "imputation", "timings")},
    figures={"loss_figure": ("loss.png", "rb_objective_loss.rst"),
             "discrimination_figure": ("discrimination.png", "rb_discrimination.rst"),
             "ability_figure": ("abilities.png", "rb_abilities.rst"), "error_figure": ("errors.png", "rb_errors.rst")},
    category="rb_imputation",
    subcategory="{dataset}: {missing} objectives",
    blocks=rb_fit_blocks,
    input={"imputation": rb_imputation_records,
           "reference": "results/rb_imputation/{dataset}/reference/estimates.csv",
           "reference_record": "results/rb_imputation/{dataset}/reference/fit.json"},
    params={"fits": rb_fits},
    constraints={},
    script="rb_comparison.py",
    log="logs/rb_imputation/{dataset}/{missing}/comparison.log",
)
