# Input, params and target functions of the rb_imputation rules (workflow/rules/rb_imputation.smk);
# kept apart from the rules so that `snakemake --lint` stays clean.
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


def rb_datasets():
    return [rb_config()["dataset"]] if rb_config()["enabled"] else []


def reference_seed(wildcards):
    return job_seed("fit", "rb_imputation", wildcards.dataset, "reference")


def replication_seed(wildcards):
    """Every fit of one replication shares this seed (common random numbers across objectives)."""
    return job_seed("fit", "rb_imputation", wildcards.dataset, wildcards.missing, wildcards.rep)


def imputation_seed(wildcards):
    return job_seed("imputation", "rb_imputation", wildcards.dataset, wildcards.missing, wildcards.rep)


def rb_fits(wildcards):
    """Every fit record of one data set and missingness design: replication by replication, the
    objectives with _M<copies> for the copy-based ones (rb_imputation.conditions)."""
    return [f"{fit.folder}/fit.json" for fit in rb_study.conditions(config)
            if fit.rep is not None and fit.dataset == wildcards.dataset and fit.missing == wildcards.missing]


def rb_imputation_records(wildcards):
    return expand("results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/imputation.json",
                  dataset=wildcards.dataset, missing=wildcards.missing, rep=range(rb_config()["replications"]))


def rb_targets():
    study = rb_config()
    targets = []
    for ds in rb_datasets():
        targets += [f"results/rb_imputation/{ds}/reference/fit.json", f"results/rb_imputation/{ds}/recovery.csv"]
        if study["replications"] > 0:
            targets.append(f"results/rb_imputation/{ds}/{study['missing']}/summary.csv")
    return targets


def rb_report_parameters():
    return {"datasets": ",".join(rb_datasets()), "missing": rb_config()["missing"],
            "results_dir": "results/rb_imputation"}


STUDY_TARGETS["rb_imputation"] = rb_targets
REPORT_PARAMETERS["rb_imputation"] = rb_report_parameters
