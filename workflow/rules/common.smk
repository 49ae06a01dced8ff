# Shared by every .smk file: config validation (with defaults), the interpreter and software
# environment, wildcard constraints, job seeds, generic data-set helpers, and the list of final
# targets assembled from what each study registers.
#
# Each study (workflow/rules/<study>.smk, functions in workflow/rules/functions/<study>.smk)
# registers two functions here:
#   STUDY_TARGETS[study]()      -> the study's final result files ([] when the study is off)
#   REPORT_PARAMETERS[study]()  -> the papermill parameters of notebooks/<study>.py
# Model-fitting rules are named fit_<what is fitted>: the SLURM profile gives each of them
# runtime, memory, CPUs and a GPU, and tests/workflow checks that it does.
# A simulation study's fitting job fits a block of a condition's replications and writes each
# fit to rep<r>/ in its output folder, .../blocks/block<b>/; the rules after it take the block
# folders as input and name the fits' files in params (replication_folder, blocks_of).
import os
import shlex
import sys
from pathlib import Path

from snakemake.utils import validate

from bayesirt.config import ConfigError
from bayesirt.config import check as check_config
from bayesirt.seeds import derive
from bayesirt.studies import check_config as check_study_configs


def config_files():
    """The config file(s) of this run as the user named them (relative to the working
    directory where they lie under it), for messages about the config."""
    names = []
    for path in map(str, workflow.configfiles):
        rel = os.path.relpath(path)
        names.append(path if rel.startswith("..") else rel)
    return ", ".join(names) or "(no config file)"


def stop_on_config_error(message):
    """Stop at parse time with one line on stderr, `<config file(s)>: <message>`, and no
    traceback (SystemExit: Snakemake lets it through, Python prints the text and exits 1)."""
    sys.exit(f"{config_files()}: {message}")


try:
    # A one-line error naming the key first; then Snakemake's validation fills in the defaults.
    check_config(config, workflow.source_path("../schemas/config.schema.yaml"))
    validate(config, schema="../schemas/config.schema.yaml", set_default=True)
    # What the schema cannot say (missingness names such as mcar150 or mar0, missingness a design
    # cannot hold): every study's settings.check, so that a bad value stops the run before any job.
    check_study_configs(config)
except ConfigError as err:
    stop_on_config_error(err)

# Interpreter of this workflow: shell rules call it explicitly so they use the same environment.
PYTHON = sys.executable
ENV = "../../environment.yml"

STUDY_TARGETS = {}
REPORT_PARAMETERS = {}


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


def dataset_config(wildcards):
    return config["datasets"][wildcards.dataset]


def datasets_from(*sources):
    """A regex alternation of the data sets with one of these sources (one that never matches if none)."""
    return "|".join(n for n, d in config["datasets"].items() if d["source"] in sources) or "(?!x)x"


def design_dataset(design):
    """The prepared data set a study design fits, as an input to unpack(): the design's
    `dataset` (real data, no truth), or nothing for a simulated design."""
    name = design.get("dataset")
    return {"dataset": f"data/processed/{name}/responses.parquet"} if name else {}


def truth_of(wildcards):
    """The truth table where the data set is simulated, else nothing."""
    if config["datasets"][wildcards.dataset]["source"] == "simulate":
        return f"data/processed/{wildcards.dataset}/truth.csv"
    return []


def replication_folder(block_folder, rep):
    """The folder of one fit: rep<rep>/ in the folder of the block job that fitted it. The block
    folder is the job's output; the rules after it take block folders as input (Snakemake
    tracks the folder, not the files in it) and name a fit's files in params."""
    return f"{block_folder}/rep{rep}"


def blocks_of(fit_files):
    """The block folders holding these fit files (``<block>/rep<r>/<file>``), each once, in order."""
    return list(dict.fromkeys(str(Path(f).parent.parent) for f in fit_files))


def study_results(study):
    """A study's final result files (tables, figures, fit records), without its report."""
    return STUDY_TARGETS[study]()


def reported_studies():
    """The studies that produce results in this config; each gets a report notebook."""
    return [study for study in STUDY_TARGETS if study_results(study)]


def all_targets(wildcards):
    targets = []
    for study in reported_studies():
        targets += study_results(study)
        targets += [f"results/reports/{study}.ipynb", f"results/reports/{study}.html"]
    return targets


def report_results(wildcards):
    """Everything a study's report reads: the study's final results."""
    return study_results(wildcards.study)


def papermill_parameters(wildcards):
    """The study's notebook parameters as papermill options, each of the type the notebook's
    parameters cell declares: a string as it is (-r: papermill would read "True" or "1e3" in a
    design list as a bool or a number), a bool or number as itself (-p, which papermill parses)."""
    options = []
    for name, value in REPORT_PARAMETERS[wildcards.study]().items():
        flag = "-r" if isinstance(value, str) else "-p"
        options.append(f"{flag} {name} {shlex.quote(str(value))}")
    return " ".join(options)
