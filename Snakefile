# bayesirt: Bayesian and variational IRT with missing responses.
# Run:  snakemake --cores all --workflow-profile workflow/profiles/local
# Report: snakemake --report results/report.html (after a run)
# Config: config/config.yaml (demo scale, simulated data, offline); config/paper.yaml (paper
# scale, real data); config/test.yaml (tiny, for CI).  See README.md.
from snakemake.utils import min_version

from bayesirt.studies import STUDIES

min_version("9.0")


# The default config applies only when no --configfile is given, so that a chosen config is
# used as written rather than merged key by key into the default one.
if not config:

    configfile: "config/config.yaml"



# Shared rules first, then one file per study (each registers its jobs, targets and report
# parameters in common.smk's tables, and holds the rules that are its own), then the rules of
# the registered jobs, all of one shape (study.smk), and the report rule that serves every study.
include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/missingness.smk"


# A study's rule file is workflow/rules/<study>.smk, for every study package bayesirt.studies knows.
for _study in STUDIES:

    include: f"workflow/rules/{_study}.smk"


include: "workflow/rules/irt_tables.smk"
include: "workflow/rules/study.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        all_targets,
        irt_table_targets,
    default_target: True


# Every job's wall time, CPU time and peak memory (Snakemake's benchmark files), beside its log:
# logs/benchmarks/<the log's path>.tsv (the default_workflow benchmark case reads them). Set here
# for all rules at once, with the path handling Snakemake gives the rule's outputs.
for _rule in workflow.rules:
    if _rule.benchmark is None and _rule.log:
        _rule.benchmark_modifier = _rule.output_modifier
        _log = str(_rule.log[0]).removeprefix("logs/").removesuffix(".log")
        _rule.benchmark = f"logs/benchmarks/{_log}.tsv"
