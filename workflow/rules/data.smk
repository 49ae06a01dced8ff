# Data sets named in config["datasets"]: simulated ones with known parameters, and real data
# downloaded and prepared. (A study's own simulated designs live in its rule file.)


rule simulate_dataset:
    output:
        responses="data/processed/{dataset}/responses.parquet",
        sidecar="data/processed/{dataset}/responses.json",
        truth="data/processed/{dataset}/truth.csv",
    params:
        spec=dataset_config,
        seed=data_seed,
    wildcard_constraints:
        dataset=datasets_from("simulate"),
    log:
        "logs/data/{dataset}.log",
    conda:
        ENV
    script:
        "../scripts/simulate_dataset.py"


# =============================================================================================
# Real data: download and prepare (RWA, IPIP-FFM). Data sets with `source: rwa` or
# `source: ipip_ffm` in the config; `url` may be a mirror, a file:// URL or a local path.
# Without network the download fails at once, naming the URL and where to put the file by hand
# (data/raw/{dataset}/manual/<file name in the url>); a copy there is used instead of the url.
# =============================================================================================


rule download_raw:
    output:
        download="data/raw/{dataset}/download",
        record="data/raw/{dataset}/download.json",
    params:
        spec=dataset_config,
        retries=3,
        timeout=60,
        manual_folder="data/raw/{dataset}/manual",
    wildcard_constraints:
        dataset=datasets_from("rwa", "ipip_ffm"),
    log:
        "logs/data/{dataset}.download.log",
    conda:
        ENV
    script:
        "../scripts/download.py"


rule prepare_rwa:
    input:
        download="data/raw/{dataset}/download",
        record="data/raw/{dataset}/download.json",
    output:
        responses="data/processed/{dataset}/responses.parquet",
        sidecar="data/processed/{dataset}/responses.json",
    params:
        spec=dataset_config,
    wildcard_constraints:
        dataset=datasets_from("rwa"),
    log:
        "logs/data/{dataset}.prepare.log",
    conda:
        ENV
    script:
        "../scripts/prepare_rwa.py"


rule prepare_ipip_ffm:
    # responses.* = training persons; holdout.* = persons held out for log-likelihood evaluation
    input:
        download="data/raw/{dataset}/download",
        record="data/raw/{dataset}/download.json",
    output:
        responses="data/processed/{dataset}/responses.parquet",
        sidecar="data/processed/{dataset}/responses.json",
        holdout="data/processed/{dataset}/holdout.parquet",
        holdout_sidecar="data/processed/{dataset}/holdout.json",
        row_counts="data/processed/{dataset}/row_counts.csv",
    params:
        spec=dataset_config,
        seed=data_seed,
        base_seed=config["seed"],  # the split's seed: derive(base_seed, "holdout", dataset)
    wildcard_constraints:
        dataset=datasets_from("ipip_ffm"),
    log:
        "logs/data/{dataset}.prepare.log",
    conda:
        ENV
    script:
        "../scripts/prepare_ipip.py"


# =============================================================================================
# Your own questionnaire (`source: table`): a CSV, TSV or parquet file named in the config,
# checked and prepared like the real data above (bayesirt.data.table). Bad input stops here,
# before any fit, with one line naming the file, line and column. The example of
# config/examples/own_data.yaml is written from an installed package (bayesirt.data.examples).
# =============================================================================================


include: "functions/table_data.smk"


rule example_table:
    output:
        "data/raw/examples/{example}.csv",
    wildcard_constraints:
        example="bfi|gss_abortion",
    log:
        "logs/data/examples/{example}.log",
    conda:
        ENV
    script:
        "../scripts/example_table.py"


rule prepare_table:
    # responses.* = training persons (all persons unless holdout_fraction > 0); holdout.* = the
    # persons held out; persons.csv = their ids; row_counts.csv = persons left after each step;
    # item_rest.csv = each item's corrected item-rest correlation with its scale, all persons
    # (bayesirt.data.item_direction; the log warns about every item flagged there)
    input:
        table=table_file,
    output:
        responses="data/processed/{dataset}/responses.parquet",
        sidecar="data/processed/{dataset}/responses.json",
        holdout="data/processed/{dataset}/holdout.parquet",
        holdout_sidecar="data/processed/{dataset}/holdout.json",
        persons="data/processed/{dataset}/persons.csv",
        row_counts="data/processed/{dataset}/row_counts.csv",
        item_rest="data/processed/{dataset}/item_rest.csv",
    params:
        spec=dataset_config,
        base_seed=config["seed"],  # the split's seed: derive(base_seed, "holdout", dataset)
    wildcard_constraints:
        dataset=datasets_from("table"),
    log:
        "logs/data/{dataset}.prepare.log",
    conda:
        ENV
    script:
        "../scripts/prepare_table.py"
