# gibbs_2pno (seed 001): the vectorized data-augmentation Gibbs sampler for the 2PNO model
# (missing cells augmented or omitted) against NUTS, and the seed's Gaussian mixture example.
#   data/processed/gibbs_2pno/{design}/{missing}/rep{rep}/        data of one condition
#   results/gibbs_2pno/{design}/{missing}/{method}/blocks/block{block}/   one job: a block of fits
#   results/gibbs_2pno/{design}/{missing}/{method}/blocks/block{block}/rep{rep}/   one fit
#   results/gibbs_2pno/{design}/                                  tables and figures
#   results/gibbs_2pno/mixture/                                   the mixture example


include: "functions/gibbs_2pno.smk"


# Simulated 2PNO data of a design (complete data shared by a replication's missingness
# conditions) with the design's missingness, and the truth; for a design that names a dataset,
# that prepared binary data set with the design's extra missingness (no truth).
data_job(
    "gibbs_simulate",
    folder="data/processed/gibbs_2pno/{design}/{missing}/rep{rep}",
    files={"responses": "responses.parquet", "sidecar": "responses.json", "truth": "truth.csv"},
    input=gibbs_design_dataset,
    params={"design": data_design(gibbs_design_config), "seed": gibbs_data_seed, "missing_seed": gibbs_missing_seed},
    constraints={"design": gibbs_design_pattern()},
    script="gibbs_simulate.py",
)

# One method (gibbs | gibbs_omit | gibbs_seed | nuts) on a block of one condition's replications
# (the design's block_size of them): the Gibbs samplers sweep every replication's chains in one
# vectorized program, NUTS fits them one after another; each replication's draws, diagnostics,
# estimates, item and person tables and model checks go to rep{rep}/ in the block's folder, which
# is what the rules after it read.
block_job(
    "fit_gibbs_2pno",
    gibbs_conditions,
    gibbs_block_condition,
    folder="results/gibbs_2pno/{design}/{missing}/{method}",
    data={"responses": f"{GIBBS_DATA}/responses.parquet", "truth": f"{GIBBS_DATA}/truth.csv"},
    seed=gibbs_fit_seed,
    # study: a rerun trigger (the script reads its settings from the config), the job's design alone
    params={"study": lambda wildcards: one_design(gibbs_study_config(wildcards), wildcards)},
    constraints={"design": gibbs_design_pattern(), "method": "|".join(gibbs_conditions.METHODS)},
    threads=gibbs_fit_threads,
    script="gibbs_fit.py",
)

# Every fit of a design: recovery, R-hat/ESS, Gibbs against NUTS, augmented against omitted
# missing cells, timings with ESS per second, and the figures.
tables_job(
    "gibbs_tables",
    folder="results/gibbs_2pno/{design}",
    files={"fits": "fits.csv", "recovery": "recovery.csv", "diagnostics": "diagnostics.csv",
           "nuts": "gibbs_vs_nuts.csv", "missing": "augment_vs_omit.csv", "timings": "timings.csv"},
    figures={"figure_trace": ("trace.png", "gibbs_trace.rst"), "figure_rank": ("rank.png", "gibbs_rank.rst"),
             "figure_autocorrelation": ("autocorrelation.png", "gibbs_autocorrelation.rst"),
             "figure_recovery": ("recovery.png", "gibbs_recovery.rst"),
             "figure_intervals": ("intervals.png", "gibbs_intervals.rst")},
    category="gibbs_2pno",
    subcategory="{design}",
    blocks=gibbs_fit_blocks,
    params={"fits": gibbs_fit_files("fit.json"), "estimates": gibbs_fit_files("estimates.csv")},
    constraints={"design": gibbs_design_pattern()},
    script="gibbs_tables.py",
)


rule gibbs_mixture_simulate:
    # Heights-like data of seed 001's mixture example (women and men, one known sd).
    output:
        data="data/processed/gibbs_2pno/mixture/heights.csv",
    params:
        mixture=gibbs_mixture_config,  # a rerun trigger: the script reads its settings from the config
        seed=job_seed("data", "gibbs_2pno", "mixture"),
    log:
        "logs/data/gibbs_2pno/mixture.log",
    conda:
        ENV
    script:
        "../scripts/gibbs_mixture_simulate.py"


rule fit_gibbs_mixture:
    # The two-component mixture by its Gibbs sampler (ordering mu_0 < mu_1), its posterior
    # table and figure.
    input:
        data="data/processed/gibbs_2pno/mixture/heights.csv",
    output:
        record="results/gibbs_2pno/mixture/fit/fit.json",
        estimates="results/gibbs_2pno/mixture/fit/estimates.csv",
        posterior="results/gibbs_2pno/mixture/fit/posterior.nc",
        table="results/gibbs_2pno/mixture/posterior.csv",
        figure=report("results/gibbs_2pno/mixture/figures/mixture.png", caption="../report/gibbs_mixture.rst",
                      category="gibbs_2pno", subcategory="mixture"),
    params:
        mixture=gibbs_mixture_config,  # a rerun trigger: the script reads its settings from the config
        seed=job_seed("fit", "gibbs_2pno", "mixture"),
    log:
        "logs/gibbs_2pno/mixture.log",
    conda:
        ENV
    script:
        "../scripts/gibbs_mixture_fit.py"
