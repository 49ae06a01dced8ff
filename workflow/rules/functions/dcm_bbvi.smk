# Input, params and target functions of the dcm_bbvi rules (workflow/rules/dcm_bbvi.smk);
# kept apart from the rules so that `snakemake --lint` stays clean.
from bayesirt.studies.dcm_bbvi import conditions as dcm_conditions
from bayesirt.studies.dcm_bbvi import settings as dcm_settings


DCM_DATA = "data/processed/dcm_bbvi/{design}/{missing}/rep{rep}"  # one replication's data


def dcm_config():
    # a config may leave the study out (e.g. an example that runs another study only)
    return config["studies"].get("dcm_bbvi") or {"enabled": False, "designs": {}}


def dcm_fits():
    return dcm_conditions.conditions(config)


def dcm_design_pattern():
    """A regex alternation of design names (one that never matches if none)."""
    return "|".join(dcm_config()["designs"]) if dcm_fits() else "(?!x)x"


def dcm_design_spec(wildcards):
    return dcm_conditions.design_spec(wildcards.design, dcm_config()["designs"][wildcards.design])


def dcm_fit_settings(wildcards):
    """What a fit takes from the config (dcm_bbvi.settings.Settings), with its design's block size."""
    return dcm_settings.Settings.from_config(config, wildcards.design)


def dcm_data_seed(wildcards):
    return job_seed("data", "dcm_bbvi", wildcards.design, wildcards.missing, wildcards.rep)


def dcm_fit_seed(wildcards):
    """Every method on one data set shares this seed (common random numbers)."""
    return job_seed("fit", "dcm_bbvi", wildcards.design, wildcards.missing, wildcards.rep)


def dcm_block_condition(wildcards):
    """The condition a block job fits (its replications: ``block_fits``); the NUTS rule's
    method is in its path, not a wildcard."""
    return dcm_conditions.Condition(wildcards.design, wildcards.missing, wildcards.get("method", "nuts"), 0)



def dcm_fit_records(wildcards):
    """Every fit record of the study, in the config's order (params of the tables)."""
    return fit_files(dcm_conditions, dcm_fits(), "fit.json")


def dcm_fit_blocks(wildcards=None):
    """The block folders of every fit (the tables' input)."""
    return blocks_of(dcm_fit_records(wildcards))


def dcm_data_sets():
    """Every simulated data set of the study, as (design, missing, rep), in order."""
    return list(dict.fromkeys((f.design, f.missing, f.rep) for f in dcm_fits()))


def dcm_data_files(name):
    """An input function: file ``name`` of every data set (``dcm_data_sets``), in order."""
    def files(wildcards):
        return [f"data/processed/dcm_bbvi/{d}/{m}/rep{r}/{name}" for d, m, r in dcm_data_sets()]
    return files


def dcm_targets():
    if not dcm_fits():
        return []
    return [f"results/dcm_bbvi/{name}.csv" for name in ("summary", "fits", "profile_accuracy", "gradient_variance",
                                                          "estimates", "elbo", "timings", "oracle")] + (
        dcm_fit_blocks())  # the blocks' folders, with the model checks their jobs wrote beside every fit


def dcm_report_parameters():
    return {"results_dir": "results/dcm_bbvi", "seed_accuracy": dcm_conditions.SEED_ACCURACY}


STUDY_TARGETS["dcm_bbvi"] = dcm_targets
REPORT_PARAMETERS["dcm_bbvi"] = dcm_report_parameters
