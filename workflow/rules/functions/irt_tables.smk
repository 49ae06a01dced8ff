# Input and target functions of the item and person table rules (workflow/rules/irt_tables.smk);
# kept apart from the rules so that `snakemake --lint` stays clean.
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


def fit_folder(record):
    """The folder of a fit record path."""
    return record.rsplit("/", 1)[0]


def irt_table_targets(wildcards):
    """items.csv and persons.csv of every fit the config's studies make."""
    folders = []
    # the mixture GRM (n_dimensions > 1) is not a model with a slope-intercept form: no tables
    for ds in rb_datasets() if rb_config()["n_dimensions"] == 1 else []:
        folders.append(f"results/rb_imputation/{ds}/reference")
        if rb_config()["replications"] > 0:
            rb_wildcards = SimpleNamespace(dataset=ds, missing=rb_config()["missing"])
            folders += [fit_folder(f) for f in rb_fits(rb_wildcards)]
    for name in ifa_designs():
        folders += [fit_folder(f) for f in ifa_fit_records(SimpleNamespace(design=name))]
    for name in vibo_designs():
        folders += [fit_folder(f) for f in vibo_fit_records(SimpleNamespace(design=name))]
    for name in gibbs_designs():
        folders += [fit_folder(f) for f in gibbs_fit_records(SimpleNamespace(design=name))]
    return [f"{f}/{table}.csv" for f in folders for table in ("items", "persons")]
