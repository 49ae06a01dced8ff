# Input, params and target functions of the gibbs_2pno rules (workflow/rules/gibbs_2pno.smk);
# kept apart from the rules so that `snakemake --lint` stays clean.
from bayesirt.studies import gibbs_2pno


def gibbs_config():
    return config["studies"].get("gibbs_2pno") or {"enabled": False, "designs": {}}


def gibbs_designs():
    s = gibbs_config()
    return s["designs"] if s.get("enabled", True) else {}


def gibbs_mixture_on():
    s = gibbs_config()
    return s.get("enabled", True) and s.get("mixture", {}).get("enabled", True)


def gibbs_design_pattern():
    """A regex alternation of design names (one that never matches if none)."""
    return "|".join(gibbs_designs()) or "(?!x)x"


def gibbs_design_config(wildcards):
    return gibbs_config()["designs"][wildcards.design]


def gibbs_design_dataset(wildcards):
    """The prepared data set a real-data design fits (none for a simulated design)."""
    return design_dataset(gibbs_design_config(wildcards))


def gibbs_data_seed(wildcards):
    """Complete data of one replication, shared by its missingness conditions."""
    return job_seed("data", "gibbs_2pno", wildcards.design, wildcards.rep)


def gibbs_missing_seed(wildcards):
    return job_seed("missing", "gibbs_2pno", wildcards.design, wildcards.missing, wildcards.rep)


def gibbs_fit_seed(wildcards):
    """Every method of one condition and replication shares this seed."""
    return job_seed("fit", "gibbs_2pno", wildcards.design, wildcards.missing, wildcards.rep)


def gibbs_design_conditions(wildcards):
    return [c for c in gibbs_2pno.conditions(gibbs_config()) if c.design == wildcards.design]


def gibbs_fit_records(wildcards):
    return [f"{c.path}/fit.json" for c in gibbs_design_conditions(wildcards)]


def gibbs_fit_estimates(wildcards):
    return [f"{c.path}/estimates.csv" for c in gibbs_design_conditions(wildcards)]


def gibbs_fit_posteriors(wildcards):
    return [f"{c.path}/posterior.nc" for c in gibbs_design_conditions(wildcards)]


def gibbs_targets():
    out = [f"results/gibbs_2pno/{name}/recovery.csv" for name in gibbs_designs()]
    if out and gibbs_mixture_on():
        out.append("results/gibbs_2pno/mixture/posterior.csv")
    return out


def gibbs_report_parameters():
    return {"designs": ",".join(gibbs_designs()), "results_dir": "results/gibbs_2pno",
            "mixture": str(bool(gibbs_mixture_on()))}


STUDY_TARGETS["gibbs_2pno"] = gibbs_targets
REPORT_PARAMETERS["gibbs_2pno"] = gibbs_report_parameters
