# Input functions and parse-time checks of the table data source (rules example_table and
# prepare_table in workflow/rules/data.smk); kept apart from the rules so that `snakemake --lint`
# stays clean.
from pathlib import Path


def table_file(wildcards):
    return config["datasets"][wildcards.dataset]["file"]


EXAMPLE_TABLES = "data/raw/examples/"

# A missing file is reported now, before any job runs (the examples are written by a rule).
for _name, _spec in config["datasets"].items():
    if _spec["source"] == "table" and not _spec["file"].startswith(EXAMPLE_TABLES):
        if not Path(_spec["file"]).is_file():
            stop_on_config_error(f"{_spec['file']}: file not found (config key 'datasets.{_name}.file')")


def person_ids_of(dataset):
    """The prepared person ids of a table data set (none for simulated or downloaded data)."""
    spec = config["datasets"].get(dataset, {})
    return f"data/processed/{dataset}/persons.csv" if spec.get("source") == "table" else []


def ifa_fit_person_ids(wildcards):
    return person_ids_of(ifa_design_config(wildcards).get("dataset", ""))
