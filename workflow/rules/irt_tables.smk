# Item and person tables beside every fit of a graded response model (bayesirt.studies.fit_tables):
#   results/rb_imputation/{dataset}/.../items.csv, persons.csv       (factorized GRM, ADVI)
#   results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/rep{rep}/items.csv, persons.csv   (IWAE, IWAVB)
# items.csv: slope-intercept and IRT form (a, b_k = -d_k / a; MDISC, MDIFF for items on several
# factors); persons.csv: scores and posterior sds per factor with the persons' ids.
# Included after the study files, whose functions (rb_conditions, ifa_responses ...) it uses.
from types import SimpleNamespace


def person_ids_of(dataset):
    """The prepared person ids of a table data set (none for simulated or downloaded data)."""
    spec = config["datasets"].get(dataset, {})
    return f"data/processed/{dataset}/persons.csv" if spec.get("source") == "table" else []


def rb_fit_responses(wildcards):
    if wildcards.fit == "reference":
        return f"data/processed/{wildcards.dataset}/responses.parquet"
    missing, rep = wildcards.fit.split("/")[:2]
    return f"data/processed/{wildcards.dataset}/missing/{missing}/{rep}/responses.parquet"


def rb_fit_person_ids(wildcards):
    return person_ids_of(wildcards.dataset)


def ifa_fit_person_ids(wildcards):
    return person_ids_of(ifa_design_config(wildcards).get("dataset", ""))


def irt_table_targets(wildcards):
    """items.csv and persons.csv of every fit the config's studies make."""
    folders = []
    # the mixture GRM (n_dimensions > 1) is not a model with a slope-intercept form: no tables
    for ds in rb_datasets() if rb_config()["n_dimensions"] == 1 else []:
        folders.append(f"results/rb_imputation/{ds}/reference")
        if rb_config()["replications"] > 0:
            rb_wildcards = SimpleNamespace(dataset=ds, missing=rb_config()["missing"])
            folders += [f[: -len("/fit.json")] for f in rb_fits(rb_wildcards)]
    for name in ifa_designs():
        folders += [f[: -len("/fit.json")] for f in ifa_fit_records(SimpleNamespace(design=name))]
    return [f"{f}/{table}.csv" for f in folders for table in ("items", "persons")]


rule rb_irt_tables:
    input:
        record="results/rb_imputation/{dataset}/{fit}/fit.json",
        responses=rb_fit_responses,
        person_ids=rb_fit_person_ids,
    output:
        item_table="results/rb_imputation/{dataset}/{fit}/items.csv",
        person_table="results/rb_imputation/{dataset}/{fit}/persons.csv",
    wildcard_constraints:
        fit=r"reference|(mcar|mar|mnar)\d+(\.\d+)?/rep\d+/[a-z_]+?(_M\d+)?",
    log:
        "logs/rb_imputation/{dataset}/{fit}/irt_tables.log",
    conda:
        ENV
    script:
        "../scripts/irt_tables.py"


rule ifa_irt_tables:
    input:
        record="results/amortized_ifa/{design}/{fitname}/rep{rep}/fit.json",
        responses=ifa_responses,
        person_ids=ifa_fit_person_ids,
    output:
        item_table="results/amortized_ifa/{design}/{fitname}/rep{rep}/items.csv",
        person_table="results/amortized_ifa/{design}/{fitname}/rep{rep}/persons.csv",
    wildcard_constraints:
        design=ifa_design_pattern(),
        fitname=r"(iwae|iwavb)_P\d+_R\d+",
    log:
        "logs/amortized_ifa/{design}/{fitname}/rep{rep}.irt_tables.log",
    conda:
        ENV
    script:
        "../scripts/irt_tables.py"
