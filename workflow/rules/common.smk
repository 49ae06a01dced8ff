# Shared by every .smk file: config validation (with defaults), the interpreter and software
# environment, wildcard constraints, job seeds, generic data-set helpers, and the list of final
# targets assembled from what each study registers.
#
# Each study (workflow/rules/<study>.smk, functions in workflow/rules/functions/<study>.smk)
# registers its jobs of the shared shapes (data_job, block_job, tables_job below: study.smk makes
# their rules) and two functions:
#   STUDY_TARGETS[study]()      -> the study's final result files ([] when the study is off)
#   REPORT_PARAMETERS[study]()  -> the papermill parameters of notebooks/<study>.py
# Model-fitting rules are named fit_<what is fitted>: the SLURM profile gives each of them
# runtime, memory, CPUs and a GPU, and tests/workflow checks that it does.
# A simulation study's fitting job fits a block of a condition's replications and writes each
# fit to rep<r>/ in its output folder, .../blocks/block<b>/; the rules after it take the block
# folders as input and name the fits' files in params. Every study's blocks come from its
# conditions module's condition_blocks(config, fit) alone (bayesirt.studies.design_conditions),
# through the helpers here: block_fits and each_fit for a block job, fit_folder, fit_files and
# blocks_of for the rules after it.
import os
import shlex
import sys
from dataclasses import asdict
from dataclasses import replace as replace_fit
from pathlib import Path
from types import SimpleNamespace

from snakemake.utils import validate

from bayesirt.config import ConfigError
from bayesirt.config import check as check_config
from bayesirt.seeds import derive
from bayesirt.studies import check_config as check_study_configs
from bayesirt.studies import design_conditions


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


def one_design(study, wildcards):
    """A study's config section with its designs narrowed to the job's (``wildcards.design``): a
    fitting job's settings as its rerun trigger, which a change to another design must not fire
    (Snakemake reruns a job whose params changed)."""
    return {**study, "designs": {wildcards.design: study["designs"][wildcards.design]}}


# A design's keys that say which fits run and how jobs group them, not what a replication's data
# are (each replication's data come from its own seed and the job's missingness wildcard).
FIT_PLAN_KEYS = ("replications", "block_size", "enabled", "nuts", "missing")


def data_design(design_of, keys=None):
    """A design's config as a data job's params, without ``FIT_PLAN_KEYS``: its rerun trigger,
    so that running more replications or conditions does not resimulate the ones that exist.
    ``design_of`` maps the job's wildcards to the design's config section; ``keys``: only these
    (the keys the study's simulation reads), where its designs also hold methods' settings."""
    if keys is not None:
        return lambda wildcards: {k: v for k, v in design_of(wildcards).items() if k in keys}
    return lambda wildcards: {k: v for k, v in design_of(wildcards).items() if k not in FIT_PLAN_KEYS}


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


def fit_folder(conditions, fit):
    """The folder of one fit of the study whose ``conditions`` module is given: rep<r>/ in the
    folder of the block job that fitted it. The block folder is the job's output; the rules
    after it take block folders as input (Snakemake tracks the folder, not the files in it) and
    name a fit's files in params."""
    return design_conditions.fit_folder(conditions, config, fit)


def fit_files(conditions, fits, name):
    """File ``name`` of each of ``fits`` (conditions of one study), in order."""
    return [f"{fit_folder(conditions, fit)}/{name}" for fit in fits]


def block_fits(conditions, block_condition):
    """A function of a block job's wildcards: the fits of its block ``{block}`` of the condition
    that ``block_condition(wildcards)`` names (at any replication), in order."""
    def fits(wildcards):
        fit = block_condition(wildcards)
        return [replace_fit(fit, rep=rep) for rep in conditions.condition_blocks(config, fit)[int(wildcards.block)]]
    return fits


def each_fit(fits, value):
    """An input or params function of a block job: for each fit of ``fits(wildcards)``
    (``block_fits``), ``value(fit)``, or ``value`` formatted with the fit's fields where it is a
    path pattern such as ``data/{design}/rep{rep}/responses.parquet``; empty values (the truth
    of real data) are left out."""
    def values(wildcards):
        out = [value.format(**asdict(fit)) if isinstance(value, str) else value(fit) for fit in fits(wildcards)]
        return [v for v in out if v != []]
    return values


def rep_of(fit):
    """A fit's replication (the ``reps`` params of a block job: ``each_fit(fits, rep_of)``)."""
    return fit.rep


def blocks_of(fit_files):
    """The block folders holding these fit files (``<block>/rep<r>/<file>``), each once, in order."""
    return list(dict.fromkeys(str(Path(f).parent.parent) for f in fit_files))


# ---- the study template (workflow/rules/study.smk) ---------------------------------------------
# A study's rule file registers its jobs here; study.smk makes one rule of each, all of one shape.
DATA_JOBS = []
BLOCK_JOBS = []
TABLES_JOBS = []


SCRIPTS = {}  # rule name -> its script in workflow/scripts/


def template_script(scope):
    """The script path of a template rule, given ``locals()``. Snakemake evaluates a rule's
    ``script:`` expression twice: when the rule is defined (at module level, where the loop's
    current job is ``_job``) and again when a job runs, inside the rule's function, when the loop
    has long moved on (``_job`` is then the last job) but the function's argument ``rule`` is the
    rule's name. A plain ``f"../scripts/{_job.script}"`` would run the last job's script in
    every rule."""
    name = scope["rule"] if isinstance(scope.get("rule"), str) else scope["_job"].name
    return f"../scripts/{SCRIPTS[name]}"


def keep_recorded_code(name):
    """Set the code Snakemake records for the template's job ``name``, which its code trigger
    compares on the next run, to what a study file spelling out its script wrote before the
    template (the script directive with "../scripts/<file>" on its own line). The template's
    own spelling, template_script(locals()), is one text for every job: results made before the
    template would all look changed, and a job given another script would not."""
    workflow.get_rule(name).run_func_src = f'        "../scripts/{SCRIPTS[name]}"\n'


def no_input(wildcards):
    return {}


def data_job(name, folder, files, script, params, constraints, input=no_input):
    """The data of one replication of a study's condition (simulated, or a prepared data set
    with the design's missingness): files ``files`` (output name -> file name) in ``folder``, a
    path pattern ending in ``rep{rep}``, written by ``workflow/scripts/<script>``. ``input`` is an
    input function for ``unpack`` (a design's prepared data set, say)."""
    log = f"logs/data/{folder.removeprefix('data/processed/')}.log"
    SCRIPTS[name] = script
    DATA_JOBS.append(SimpleNamespace(name=name, folder=folder, files=files, params=params,
                                     constraints=constraints, input=input, log=log))


def block_job(name, conditions, condition, folder, data, seed, script, params, constraints, input=None,
              threads=1):
    """The fitting job of a block of one condition's replications (the rules named fit_*).

    ``condition(wildcards)`` is the condition the job fits (any replication; ``block_fits``);
    the job writes the block's folder, ``<folder>/blocks/block{block}``, where ``folder`` is the
    condition's folder as a path pattern of the rule's wildcards (the folder of
    ``Condition.block_folder``). ``data`` names the files each fit reads (input name -> a path
    pattern with the fit's fields, or a function of the fit); ``seed(fit)`` is a fit's seed;
    ``params`` and ``input`` (functions of the wildcards) are the job's own."""
    fits = block_fits(conditions, condition)
    SCRIPTS[name] = script
    BLOCK_JOBS.append(SimpleNamespace(
        name=name, fits=fits, folder=folder, data=data, seed=seed, params=params,
        constraints=constraints, input=input or {}, threads=threads,
        log=f"logs/{folder.removeprefix('results/')}/block{{block}}.log"))


def tables_job(name, folder, files, figures, blocks, script, params, constraints, input=None, category=None,
               subcategory=None, log=None):
    """A study's tables and figures from its fits: files ``files`` (output name -> file name)
    and figures ``figures`` (output name -> (file name, caption in workflow/report/)) in
    ``folder``; ``blocks`` (an input function) names the block folders whose fits it reads."""
    outputs = {key: f"{folder}/{file}" for key, file in files.items()}
    for key, (file, caption) in figures.items():
        where = {"subcategory": subcategory} if subcategory else {}
        outputs[key] = report(f"{folder}/figures/{file}", caption=f"../report/{caption}",
                               category=category, **where)
    SCRIPTS[name] = script
    TABLES_JOBS.append(SimpleNamespace(name=name, outputs=outputs, blocks=blocks, params=params,
                                       constraints=constraints, input=input or {},
                                       log=log or f"logs/{folder.removeprefix('results/')}/tables.log"))


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
