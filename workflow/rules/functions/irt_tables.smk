# Input and target functions of the item and person table rules (workflow/rules/irt_tables.smk);
# kept apart from the rules so that `snakemake --lint` stays clean.
from types import SimpleNamespace


def rb_fit_responses(wildcards):
    """The responses the reference fitted (the objectives' fits write their tables themselves)."""
    return f"data/processed/{wildcards.dataset}/responses.parquet"


def rb_fit_person_ids(wildcards):
    return person_ids_of(wildcards.dataset)


def fit_folder(record):
    """The folder of a fit record path."""
    return record.rsplit("/", 1)[0]


def irt_table_targets(wildcards):
    """items.csv and persons.csv of every rb_imputation fit (rule rb_irt_tables for the reference,
    rb_replication for the objectives' fits, written by their block's job)."""
    folders = []
    # the mixture GRM (n_dimensions > 1) is not a model with a slope-intercept form: no tables
    for ds in rb_datasets() if rb_config().get("n_dimensions") == 1 else []:
        folders.append(f"results/rb_imputation/{ds}/reference")
        if rb_config()["replications"] > 0:
            for missing in rb_study.missing_designs(rb_config()):
                folders += [fit_folder(f) for f in rb_fits(SimpleNamespace(dataset=ds, missing=missing))]
    return [f"{f}/{table}.csv" for f in folders for table in ("items", "persons")]
