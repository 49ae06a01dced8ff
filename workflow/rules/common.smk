# Shared helpers: config validation (with defaults), seeds, wildcard constraints, targets.
import os
import sys

from snakemake.utils import validate

from bayesirt.studies import amortized_ifa
from bayesirt.config import check as check_config
from bayesirt.seeds import derive


# A one-line error naming the key first; then Snakemake's validation fills in the defaults.
check_config(config, workflow.source_path("../schemas/config.schema.yaml"))
validate(config, schema="../schemas/config.schema.yaml", set_default=True)

# JAX's persistent compilation cache: jobs that compile the same program (replications of one
# condition, the evaluations of one design) reuse it. Results are the same with or without it;
# set JAX_COMPILATION_CACHE_DIR in the environment to put it elsewhere.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", os.path.abspath(".jax_cache"))

# Interpreter of this workflow: shell rules call it explicitly so they use the same environment.
PYTHON = sys.executable
ENV = "../../environment.yml"


wildcard_constraints:
    dataset="[A-Za-z0-9_]+",
    study="[A-Za-z0-9_]+",
    rep=r"\d+",
    missing=r"(mcar|mar|mnar)\d+(\.\d+)?",
    condition=r"[a-z_]+?(_M\d+)?",


def job_seed(*parts):
    """The seed of one job: the config seed and the job's wildcards, hashed."""
    return derive(config["seed"], *parts)


def data_seed(wildcards):
    return job_seed("data", wildcards.dataset)


def reference_seed(wildcards):
    return job_seed("fit", "rb_imputation", wildcards.dataset, "reference")


def replication_seed(wildcards):
    """Every fit of one replication shares this seed (common random numbers across objectives)."""
    return job_seed("fit", "rb_imputation", wildcards.dataset, wildcards.missing, wildcards.rep)


def imputation_seed(wildcards):
    return job_seed("imputation", "rb_imputation", wildcards.dataset, wildcards.missing, wildcards.rep)


def rb_conditions():
    """Fit conditions of the rb_imputation study: objectives, with M for the copy-based ones."""
    study = config["studies"]["rb_imputation"]
    out = []
    for objective in study["objectives"]:
        if objective in ("naive_average", "rao_blackwell", "rao_blackwell_batch"):
            out += [f"{objective}_M{m}" for m in study["n_copies"]]
        else:
            out.append(objective)
    return out


def rb_fits(wildcards):
    """Every fit record of one data set and missingness design, over replications and conditions."""
    study = config["studies"]["rb_imputation"]
    return expand("results/rb_imputation/{dataset}/{missing}/rep{rep}/{condition}/fit.json",
                  dataset=wildcards.dataset, missing=wildcards.missing,
                  rep=range(study["replications"]), condition=rb_conditions())


def rb_imputation_records(wildcards):
    study = config["studies"]["rb_imputation"]
    return expand("results/rb_imputation/{dataset}/{missing}/rep{rep}/imputation/imputation.json",
                  dataset=wildcards.dataset, missing=wildcards.missing, rep=range(study["replications"]))


def dataset_config(wildcards):
    return config["datasets"][wildcards.dataset]


def simulated_datasets():
    return [n for n, d in config["datasets"].items() if d["source"] == "simulate"]


def simulated_dataset_pattern():
    # a regex alternation of the simulated data sets' names (one that never matches if none)
    return "|".join(simulated_datasets()) or "(?!x)x"


def study_datasets(study):
    s = config["studies"][study]
    return [s["dataset"]] if s.get("enabled", True) else []


def truth_of(wildcards):
    """The truth table where the data set is simulated, else nothing."""
    if config["datasets"][wildcards.dataset]["source"] == "simulate":
        return f"data/processed/{wildcards.dataset}/truth.csv"
    return []


# ---- amortized_ifa (seed 003): designs, their data, fits and tables ----


def ifa_config():
    return config["studies"].get("amortized_ifa") or {"enabled": False, "designs": {}}


def ifa_designs(analysis=None):
    s = ifa_config()
    if not s.get("enabled", True):
        return {}
    return {n: d for n, d in s["designs"].items() if analysis is None or d["analysis"] == analysis}


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
    return f"data/processed/amortized_ifa/{wildcards.design}/rep{amortized_ifa.data_replication(design, int(wildcards.rep))}"


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


def ifa_dataset_name(wildcards):
    return ifa_design_config(wildcards).get("dataset", wildcards.design)


def ifa_data_seed(wildcards):
    return job_seed("data", "amortized_ifa", wildcards.design, wildcards.rep)


def ifa_parameter_seed(wildcards):
    """One set of true item parameters per design, shared by its replications (as in the paper)."""
    return job_seed("parameters", "amortized_ifa", wildcards.design)


def ifa_fit_seed(wildcards):
    """Every fit of one design and replication shares this seed (common random numbers)."""
    return job_seed("fit", "amortized_ifa", wildcards.design, wildcards.rep)


def ifa_fit_records(wildcards):
    design = ifa_design_config(wildcards)
    return [f"results/amortized_ifa/{f.design}/{f.condition}/rep{f.rep}/fit.json"
            for f in amortized_ifa.design_fits(wildcards.design, design, ifa_config()["methods"])]


def ifa_targets():
    targets = []
    for name, design in ifa_designs().items():
        targets.append(f"results/amortized_ifa/{name}/fits.csv")
        if design["analysis"] == "exploratory":
            targets.append(f"results/amortized_ifa/{name}/stability_summary.csv")
        else:
            targets.append(f"results/amortized_ifa/{name}/parameter_mse.csv")
    return targets


def all_targets(wildcards):
    targets = []
    if config["studies"]["rb_imputation"]["enabled"]:
        study = config["studies"]["rb_imputation"]
        for ds in study_datasets("rb_imputation"):
            targets += [
                f"results/rb_imputation/{ds}/reference/fit.json",
                f"results/rb_imputation/{ds}/recovery.csv",
            ]
            if study["replications"] > 0:
                targets.append(f"results/rb_imputation/{ds}/{study['missing']}/summary.csv")
        targets += [
            "results/reports/rb_imputation.ipynb",
            "results/reports/rb_imputation.html",
        ]
    if ifa_designs():
        targets += ifa_targets() + ["results/reports/amortized_ifa.ipynb", "results/reports/amortized_ifa.html"]
    return targets


def report_inputs(wildcards):
    """Everything the rb_imputation report reads: the study's targets but the reports."""
    return [t for t in all_targets(wildcards) if t.startswith("results/rb_imputation/")]


def ifa_report_inputs(wildcards):
    return ifa_targets()
