# Missingness injection: hide responses of a prepared matrix (simulated or real) on purpose.
#   data/processed/{dataset}/missing/{kind}{percent}/rep{rep}/responses.parquet (+ .json)
#   data/processed/{dataset}/missing/{kind}{percent}/rep{rep}/hidden.parquet
# kind: mcar, mar or mnar; percent: share of all cells hidden on top of natural missingness,
# e.g. missing/mcar15/rep0 (seed 000's 15% MCAR); hidden.parquet marks the cells hidden here,
# so that evaluation can score imputations against the values that were there.


rule inject_missingness:
    input:
        responses="data/processed/{dataset}/responses.parquet",
        sidecar="data/processed/{dataset}/responses.json",
    output:
        responses="data/processed/{dataset}/missing/{kind}{percent}/rep{rep}/responses.parquet",
        sidecar="data/processed/{dataset}/missing/{kind}{percent}/rep{rep}/responses.json",
        hidden="data/processed/{dataset}/missing/{kind}{percent}/rep{rep}/hidden.parquet",
    params:
        options=config["missingness"],
        # job seed: derive(base_seed, "missingness", dataset, kind, percent, rep)
        base_seed=config["seed"],
    wildcard_constraints:
        kind="mcar|mar|mnar",
        percent=r"\d+(\.\d+)?",
    log:
        "logs/data/{dataset}/missing/{kind}{percent}/rep{rep}.log",
    conda:
        ENV
    script:
        "../scripts/inject_missingness.py"
