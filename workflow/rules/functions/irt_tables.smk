# Input and target functions of the item and person table rules (workflow/rules/irt_tables.smk); kept
# apart from the rules so that `snakemake --lint` stays clean.


def rb_fit_responses(wildcards):
    """The responses the reference fitted (the objectives' fits write their tables themselves)."""
    return f"data/processed/{wildcards.dataset}/responses.parquet"


def rb_fit_person_ids(wildcards):
    return person_ids_of(wildcards.dataset)


def irt_table_targets(wildcards):
    """items.csv and persons.csv of rb_imputation's complete-data reference fits (rule
    rb_irt_tables); the objectives' fits write theirs in their block's job."""
    # the mixture GRM (n_dimensions > 1) is not a model with a slope-intercept form: no tables
    datasets = rb_datasets() if rb_config().get("n_dimensions") == 1 else []
    return [f"results/rb_imputation/{ds}/reference/{table}.csv" for ds in datasets for table in ("items", "persons")]
