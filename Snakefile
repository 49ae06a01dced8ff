# bayesirt: Bayesian and variational IRT with missing responses.
# Run:  snakemake --cores all --workflow-profile workflow/profiles/local
# Config: config/config.yaml (demo scale, simulated data, offline); config/paper.yaml (paper
# scale, real data); config/test.yaml (tiny, for CI).  See README.md.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/simulation.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        all_targets,
    default_target: True
