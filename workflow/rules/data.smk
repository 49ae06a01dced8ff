# Data: simulated data sets with known parameters (real-data downloads below).


rule simulate_dataset:
    output:
        responses="data/processed/{dataset}/responses.parquet",
        sidecar="data/processed/{dataset}/responses.json",
        truth="data/processed/{dataset}/truth.csv",
    params:
        spec=dataset_config,
        seed=data_seed,
    wildcard_constraints:
        dataset=simulated_dataset_pattern(),
    log:
        "logs/data/{dataset}.log",
    conda:
        ENV
    script:
        "../scripts/simulate_dataset.py"
