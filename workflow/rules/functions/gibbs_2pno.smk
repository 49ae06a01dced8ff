# Input, params and target functions of the gibbs_2pno rules (workflow/rules/gibbs_2pno.smk);
# kept apart from the rules so that `snakemake --lint` stays clean. Parse time imports only the
# study's conditions and settings (no JAX).
from types import SimpleNamespace

from bayesirt.studies.gibbs_2pno import conditions as gibbs_conditions
from bayesirt.studies.gibbs_2pno import settings as gibbs_settings


GIBBS_DATA = "data/processed/gibbs_2pno/{design}/{missing}/rep{rep}"  # one replication's data


def gibbs_study_config(wildcards):
    """The study's section of the config (its jobs run only where the study is on)."""
    return config["studies"][gibbs_conditions.STUDY]


def gibbs_mixture_config(wildcards):
    return gibbs_study_config(wildcards)["mixture"]


def gibbs_design_pattern():
    """A regex alternation of design names (one that never matches if none)."""
    return "|".join(gibbs_conditions.designs(config)) or "(?!x)x"


def gibbs_design_config(wildcards):
    return gibbs_study_config(wildcards)["designs"][wildcards.design]


def gibbs_design_dataset(wildcards):
    """The prepared data set a real-data design fits (none for a simulated design)."""
    return design_dataset(gibbs_design_config(wildcards))


def gibbs_fit_threads(wildcards):
    return gibbs_settings.fit_threads(config, wildcards.method)


def gibbs_data_seed(wildcards):
    """Complete data of one replication, shared by its missingness conditions."""
    return job_seed("data", "gibbs_2pno", wildcards.design, wildcards.rep)


def gibbs_missing_seed(wildcards):
    return job_seed("missing", "gibbs_2pno", wildcards.design, wildcards.missing, wildcards.rep)


def gibbs_fit_seed(wildcards):
    """Every method of one condition and replication shares this seed."""
    return job_seed("fit", "gibbs_2pno", wildcards.design, wildcards.missing, wildcards.rep)


def gibbs_block_condition(wildcards):
    """The condition a block job fits (its replications: ``block_fits``)."""
    return gibbs_conditions.Condition(wildcards.design, wildcards.missing, wildcards.method, 0)



def gibbs_design_conditions(wildcards):
    return gibbs_conditions.design_conditions(config, wildcards.design)


def gibbs_fit_files(name):
    """A params function: file ``name`` of every fit of a design, in the config's order."""
    return lambda wildcards: fit_files(gibbs_conditions, gibbs_design_conditions(wildcards), name)


def gibbs_fit_blocks(wildcards):
    """The block folders of every fit of a design (the tables' input)."""
    return blocks_of(gibbs_fit_files("fit.json")(wildcards))


def gibbs_targets():
    names = gibbs_conditions.designs(config)
    out = [f"results/gibbs_2pno/{name}/recovery.csv" for name in names]
    # the blocks' folders, with the model checks their jobs wrote beside every fit
    out += [b for name in names for b in gibbs_fit_blocks(SimpleNamespace(design=name))]
    if out and gibbs_conditions.mixture_on(config):
        out.append("results/gibbs_2pno/mixture/posterior.csv")
    return out


def gibbs_report_parameters():
    return {"designs": ",".join(gibbs_conditions.designs(config)), "results_dir": "results/gibbs_2pno",
            "mixture": bool(gibbs_conditions.mixture_on(config))}


STUDY_TARGETS["gibbs_2pno"] = gibbs_targets
REPORT_PARAMETERS["gibbs_2pno"] = gibbs_report_parameters
