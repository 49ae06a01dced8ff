# Imputation models: the pairwise ordinal stacking model of seed 000 (section 4), fitted on the
# responses left after missingness injection, checked, and scored on the hidden cells.


rule fit_imputation_model:
    input:
        responses="data/processed/{dataset}/missing/{missing}/rep{rep}/responses.parquet",
        hidden="data/processed/{dataset}/missing/{missing}/rep{rep}/hidden.parquet",
        complete="data/processed/{dataset}/responses.parquet",
    output:
        model="results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/model.npz",
        record="results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/imputation.json",
        submodels="results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/submodels.csv",
    params:
        settings=config["studies"]["rb_imputation"]["stacking"],
        seed=imputation_seed,
    log:
        "logs/rb_imputation/{dataset}/{missing}/rep{rep}/imputation.log",
    conda:
        ENV
    script:
        "../scripts/fit_imputation_model.py"
