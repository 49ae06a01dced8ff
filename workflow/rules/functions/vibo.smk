# Input, params and target functions of the vibo rules (workflow/rules/vibo.smk); kept apart
# from the rules so that `snakemake --lint` stays clean. Parse time: only the study's
# conditions (plain Python, no JAX).
from bayesirt.studies.vibo import conditions as vibo_conditions


VIBO_DATA = "data/processed/vibo/{design}/{missing}/rep{rep}"  # one replication's data


def vibo_config():
    return vibo_conditions.study_config(config) or {"enabled": False, "designs": {}}


def vibo_designs():
    return vibo_conditions.designs(config)


def vibo_design_pattern(truth=None):
    """A regex alternation of design names (one that never matches if none): every design, or
    only the simulated ones (truth=True) or only those that fit a prepared data set (truth=False)."""
    names = [n for n, d in vibo_designs().items() if truth is None or vibo_conditions.has_truth(d) == truth]
    return "|".join(names) or "(?!x)x"


def vibo_design_config(wildcards):
    return vibo_config()["designs"][wildcards.design]


def vibo_design_dataset(wildcards):
    """The prepared data set a real-data design fits (none for a simulated design)."""
    return design_dataset(vibo_design_config(wildcards))


def vibo_score_fraction(wildcards):
    return vibo_config()["score_fraction"]


def vibo_heldout_fraction(wildcards):
    return vibo_config()["heldout_fraction"]


def vibo_data_seed(wildcards):
    """Complete data of one replication (real data: its split into training and new persons),
    shared by its missingness conditions."""
    return job_seed("data", "vibo", wildcards.design, wildcards.rep)


def vibo_missing_seed(wildcards):
    return job_seed("missing", "vibo", wildcards.design, wildcards.missing, wildcards.rep)


def vibo_fit_seed(fit):
    """Every method of one condition and replication shares this seed (common random numbers)."""
    return job_seed("fit", "vibo", fit.design, fit.missing, str(fit.rep))


def vibo_block_condition(wildcards):
    """The condition a block job fits (its replications: ``block_fits``)."""
    return vibo_conditions.Condition(wildcards.design, wildcards.missing, wildcards.method, 0)



def vibo_fit_files(name):
    """A params function: file ``name`` of every fit of a design, in the config's order."""
    def files(wildcards):
        fits = [c for c in vibo_conditions.conditions(config) if c.design == wildcards.design]
        return fit_files(vibo_conditions, fits, name)
    return files


def vibo_fit_blocks(wildcards):
    """The block folders of every fit of a design (the tables' input)."""
    return blocks_of(vibo_fit_files("fit.json")(wildcards))


def vibo_targets():
    # the tables, and the blocks' folders with the model checks their jobs wrote beside every fit
    return [f"results/vibo/{name}/summary.csv" for name in vibo_designs()] + blocks_of(
        fit_files(vibo_conditions, vibo_conditions.conditions(config), "fit.json"))


def vibo_report_parameters():
    designs = vibo_designs()
    return {"designs": ",".join(n for n, d in designs.items() if vibo_conditions.has_truth(d)),
            "real_designs": ",".join(n for n, d in designs.items() if not vibo_conditions.has_truth(d)),
            "results_dir": "results/vibo"}


STUDY_TARGETS["vibo"] = vibo_targets
REPORT_PARAMETERS["vibo"] = vibo_report_parameters
