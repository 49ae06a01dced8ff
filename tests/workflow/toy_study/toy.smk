# toy: the mean of normal data by the sample mean and median; nothing but registrations.
from bayesirt.studies.toy import conditions as toy_conditions

TOY_DATA = "data/processed/toy/{design}/rep{rep}"


def toy_design(wildcards):
    return config["studies"]["toy"]["designs"][wildcards.design]


def toy_fit_seed(fit):
    return job_seed("fit", "toy", fit.design, str(fit.rep))


def toy_fit_files(wildcards):
    fits = [f for f in toy_conditions.conditions(config) if f.design == wildcards.design]
    return fit_files(toy_conditions, fits, "fit.json")


data_job(
    "toy_simulate",
    folder=TOY_DATA,
    files={"data": "data.csv", "truth": "truth.json"},
    params={"design": toy_design, "seed": lambda wildcards: job_seed("data", "toy", wildcards.design, wildcards.rep)},
    constraints={},
    script="toy_simulate.py",
)
block_job(
    "fit_toy",
    toy_conditions,
    lambda wildcards: toy_conditions.Condition(wildcards.design, "mcar0", wildcards.method, 0),
    folder="results/toy/{design}/mcar0/{method}",
    data={"data": f"{TOY_DATA}/data.csv", "truth": f"{TOY_DATA}/truth.json"},
    seed=toy_fit_seed,
    params={},
    constraints={"method": "|".join(toy_conditions.METHODS)},
    script="toy_fit.py",
)
tables_job(
    "toy_tables",
    folder="results/toy/{design}",
    files={"summary": "summary.csv"},
    figures={},
    blocks=lambda wildcards: blocks_of(toy_fit_files(wildcards)),
    params={"fits": toy_fit_files},
    constraints={},
    script="toy_tables.py",
)

STUDY_TARGETS["toy"] = lambda: [f"results/toy/{d}/summary.csv" for d in config["studies"]["toy"]["designs"]]
REPORT_PARAMETERS["toy"] = lambda: {"results_dir": "results/toy"}
