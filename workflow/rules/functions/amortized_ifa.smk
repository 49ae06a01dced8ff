# Input, params and target functions of the amortized_ifa rules (workflow/rules/amortized_ifa.smk);
# kept apart from the rules so that `snakemake --lint` stays clean. Parse time imports only the
# study's conditions (standard library).
from bayesirt.studies.amortized_ifa import conditions as ifa_conditions


def ifa_config():
    """The study's validated section (defaults filled in), or None where the config has none."""
    return config["studies"][ifa_conditions.STUDY] if ifa_conditions.STUDY in config["studies"] else None


def ifa_designs(analysis=None):
    s = ifa_config()
    if s is None or not s["enabled"]:
        return {}
    return {n: d for n, d in s["designs"].items() if analysis is None or d["analysis"] == analysis}


def ifa_setting(key):
    """A params function: the study's value of ``key`` (a function, so that a config without the
    study parses)."""
    return lambda wildcards: ifa_config()[key]


def ifa_design_pattern(analysis=None, simulated=None):
    """A regex alternation of design names (one that never matches if none)."""
    names = [n for n, d in ifa_designs(analysis).items() if simulated is None or ("preset" in d) == simulated]
    return "|".join(names) or "(?!x)x"


def ifa_design_config(wildcards):
    return ifa_config()["designs"][wildcards.design]


def ifa_data_folder(wildcards):
    """Simulated designs: one folder per data replication (exploratory designs refit rep0);
    real data: the prepared data set with its held-out persons."""
    design = ifa_design_config(wildcards)
    if "dataset" in design:
        return f"data/processed/{design['dataset']}"
    rep = ifa_conditions.data_replication(design, int(wildcards.rep))
    return f"data/processed/amortized_ifa/{wildcards.design}/rep{rep}"


def ifa_responses(wildcards):
    return f"{ifa_data_folder(wildcards)}/responses.parquet"


def ifa_holdout(wildcards):
    return f"{ifa_data_folder(wildcards)}/holdout.parquet"


def ifa_truth(wildcards):
    return [] if "dataset" in ifa_design_config(wildcards) else f"{ifa_data_folder(wildcards)}/truth.csv"


def ifa_first_sidecar(wildcards):
    """Item metadata and simulation attributes of a design's first data set."""
    design = ifa_design_config(wildcards)
    if "dataset" in design:
        return f"data/processed/{design['dataset']}/responses.json"
    return f"data/processed/amortized_ifa/{wildcards.design}/rep0/responses.json"


def ifa_data_seed(wildcards):
    return job_seed("data", "amortized_ifa", wildcards.design, wildcards.rep)


def ifa_parameter_seed(wildcards):
    """One set of true item parameters per design, shared by its replications (as in the paper)."""
    return job_seed("parameters", "amortized_ifa", wildcards.design)


def ifa_fit_seed(wildcards):
    """Every fit of one design and replication shares this seed (common random numbers)."""
    return job_seed("fit", "amortized_ifa", wildcards.design, wildcards.rep)


def ifa_block_condition(wildcards):
    """The condition a block job fits (``{method}_P{factors}_R{samples}``; its replications:
    ``ifa_block``)."""
    return ifa_conditions.Condition(wildcards.design, wildcards.method, int(wildcards.factors),
                                    int(wildcards.samples), 0)


ifa_block = block_fits(ifa_conditions, ifa_block_condition)


def ifa_fit_threads(wildcards):
    """A block's cores: one worker process per group of fits (studies.amortized_ifa.conditions)."""
    return ifa_conditions.block_processes(ifa_design_config(wildcards), len(ifa_block(wildcards)))


def ifa_fit_records(wildcards):
    """Every fit record of a design, in the config's order (params of the tables)."""
    fits = [f for f in ifa_conditions.conditions(config) if f.design == wildcards.design]
    return fit_files(ifa_conditions, fits, "fit.json")


def ifa_fit_blocks(wildcards):
    """The block folders of every fit of a design (the tables' input)."""
    return blocks_of(ifa_fit_records(wildcards))


def ifa_targets():
    targets = []
    for name, design in ifa_designs().items():
        targets.append(f"results/amortized_ifa/{name}/fits.csv")
        if design["analysis"] == "exploratory":
            targets.append(f"results/amortized_ifa/{name}/stability_summary.csv")
        else:
            targets.append(f"results/amortized_ifa/{name}/parameter_mse.csv")
    return targets


def ifa_report_parameters():
    return {"confirmatory": ",".join(ifa_designs("confirmatory")),
            "exploratory": ",".join(ifa_designs("exploratory")),
            "results_dir": "results/amortized_ifa"}


STUDY_TARGETS["amortized_ifa"] = ifa_targets
REPORT_PARAMETERS["amortized_ifa"] = ifa_report_parameters
