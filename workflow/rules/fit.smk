# Model fitting. One folder per fit: fit.json, estimates.csv, loss.csv, posterior.nc.


rule fit_reference:
    # The complete-data reference of the rb_imputation study: factorized GRM, mean-field ADVI.
    input:
        responses="data/processed/{dataset}/responses.parquet",
        truth=truth_of,
    output:
        record="results/rb_imputation/{dataset}/reference/fit.json",
        estimates="results/rb_imputation/{dataset}/reference/estimates.csv",
        loss="results/rb_imputation/{dataset}/reference/loss.csv",
        posterior="results/rb_imputation/{dataset}/reference/posterior.nc",
    params:
        training=config["training"],
        priors=config["priors"],
        posterior_draws=config["posterior_draws"],
        n_dimensions=config["studies"]["rb_imputation"]["n_dimensions"],
        seed=reference_seed,
    log:
        "logs/rb_imputation/{dataset}/reference.log",
    conda:
        ENV
    script:
        "../scripts/fit_reference.py"


rule fit_objective:
    # One imputation objective (condition = objective, or objective_M<copies>) on one replication.
    input:
        responses="data/processed/{dataset}/missing/{missing}/rep{rep}/responses.parquet",
        imputation="results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/model.npz",
        truth=truth_of,
    output:
        record="results/rb_imputation/{dataset}/{missing}/rep{rep}/{condition}/fit.json",
        estimates="results/rb_imputation/{dataset}/{missing}/rep{rep}/{condition}/estimates.csv",
        loss="results/rb_imputation/{dataset}/{missing}/rep{rep}/{condition}/loss.csv",
        posterior="results/rb_imputation/{dataset}/{missing}/rep{rep}/{condition}/posterior.nc",
    params:
        training=config["training"],
        priors=config["priors"],
        posterior_draws=config["posterior_draws"],
        n_dimensions=config["studies"]["rb_imputation"]["n_dimensions"],
        seed=replication_seed,
    log:
        "logs/rb_imputation/{dataset}/{missing}/rep{rep}/{condition}.log",
    conda:
        ENV
    script:
        "../scripts/fit_objective.py"


rule ifa_fit:
    # amortized_ifa: one method (iwae | iwavb) with P factors and R importance samples on one
    # replication of a design; held-out log-likelihood and recovery are evaluated in the job.
    input:
        responses=ifa_responses,
        holdout=ifa_holdout,
        truth=ifa_truth,
    output:
        record="results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/rep{rep}/fit.json",
        estimates="results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/rep{rep}/estimates.csv",
        loss="results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/rep{rep}/loss.csv",
    params:
        design=ifa_design_config,
        dataset=ifa_dataset_name,
        eval_samples=ifa_config().get("eval_samples", 5000),
        posterior_draws=ifa_config().get("posterior_draws", 100),
        seed=ifa_fit_seed,
    wildcard_constraints:
        design=ifa_design_pattern(),
        method="iwae|iwavb",
        factors=r"\d+",
        samples=r"\d+",
    log:
        "logs/amortized_ifa/{design}/{method}_P{factors}_R{samples}/rep{rep}.log",
    conda:
        ENV
    script:
        "../scripts/ifa_fit.py"
