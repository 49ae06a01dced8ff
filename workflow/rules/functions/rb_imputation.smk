# Input, params and target functions of the rb_imputation rules (workflow/rules/rb_imputation.smk);
# kept apart from the rules so that `snakemake --lint` stays clean.
from dataclasses import replace as rb_replace

from bayesirt.studies.rb_imputation import conditions as rb_study
from bayesirt.studies.rb_imputation import settings as rb_study_settings


def rb_config():
    # a config may leave the study out (e.g. an example that runs another study only)
    return config["studies"].get("rb_imputation") or {"enabled": False}


def rb_setting(name):
    """A setting of the study, looked up when a job of it is built (only when the study is on)."""
    return lambda wildcards: rb_config()[name]


def rb_fit_settings(wildcards):
    """What a fit takes from the config (rb_imputation.settings.Settings)."""
    return rb_study_settings.Settings.from_config(config)


def rb_reference_settings(wildcards):
    """The complete-data reference is fitted alone: its settings say a block of one, so that a
    change of the study's block_size leaves it as it is."""
    return rb_replace(rb_fit_settings(wildcards), block_size=1)


def rb_tables():
    """Whether the objectives' fits write item and person tables: the factorized GRM has them,
    the mixture GRM (n_dimensions > 1) has no slope-intercept form."""
    return rb_config().get("n_dimensions", 1) == 1


def rb_datasets():
    """The study's data set and, where the config names one, the seed's design (seed_dataset)."""
    return rb_study.datasets(rb_config()) if rb_config()["enabled"] else []


def reference_seed(wildcards):
    return job_seed("fit", "rb_imputation", wildcards.dataset, "reference")


def replication_seed(wildcards):
    """Every fit of one replication shares this seed (common random numbers across objectives)."""
    return job_seed("fit", "rb_imputation", wildcards.dataset, wildcards.missing, wildcards.rep)


def rb_masked_responses(wildcards):
    return f"data/processed/{wildcards.dataset}/missing/{wildcards.missing}/rep{wildcards.rep}/responses.parquet"


def rb_imputation_model(wildcards):
    return f"results/rb_imputation/{wildcards.dataset}/{wildcards.missing}/rep{wildcards.rep}/imputation/model.npz"


def rb_person_ids(wildcards):
    """The person ids of a table data set, for the fits' person tables (none otherwise)."""
    return person_ids_of(wildcards.dataset)


def rb_block_condition(wildcards):
    """The condition a block job fits (its replications, the study's masks: ``block_fits``)."""
    objective, copies = rb_study.parse_condition(wildcards.condition)
    return rb_study.Condition(wildcards.dataset, wildcards.condition, objective, wildcards.missing, 0, copies)



def imputation_seed(wildcards):
    return job_seed("imputation", "rb_imputation", wildcards.dataset, wildcards.missing, wildcards.rep)


def rb_fits(wildcards):
    """Every fit record of one data set and missingness design: replication by replication, the
    objectives with _M<copies> for the copy-based ones (rb_imputation.conditions); params of
    rule rb_comparison."""
    fits = [fit for fit in rb_study.conditions(config)
            if fit.rep is not None and fit.dataset == wildcards.dataset and fit.missing == wildcards.missing]
    return fit_files(rb_study, fits, "fit.json")


def rb_fit_blocks(wildcards):
    """The block folders of those fits (the input of rule rb_comparison)."""
    return blocks_of(rb_fits(wildcards))


def rb_imputation_records(wildcards):
    return expand("results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/imputation.json",
                  dataset=wildcards.dataset, missing=wildcards.missing, rep=range(rb_config()["replications"]))


def rb_targets():
    study = rb_config()
    targets = []
    for ds in rb_datasets():
        targets += [f"results/rb_imputation/{ds}/reference/fit.json", f"results/rb_imputation/{ds}/recovery.csv"]
        if study.get("n_dimensions") == 1:  # model checks beside the reference, not for the mixture GRM
            targets.append(f"results/rb_imputation/{ds}/reference/global_fit.json")
        if study["replications"] > 0:
            targets += [f"results/rb_imputation/{ds}/{m}/summary.csv" for m in rb_study.missing_designs(study, ds)]
    return targets


def rb_report_parameters():
    missing = dict.fromkeys(m for ds in rb_datasets() for m in rb_study.missing_designs(rb_config(), ds))
    return {"datasets": ",".join(rb_datasets()), "missing": ",".join(missing),
            "results_dir": "results/rb_imputation"}


STUDY_TARGETS["rb_imputation"] = rb_targets
REPORT_PARAMETERS["rb_imputation"] = rb_report_parameters
