# gibbs_2pno (seed 001): the vectorized data-augmentation Gibbs sampler for the 2PNO model
# (missing cells augmented or omitted) against NUTS, and the seed's Gaussian mixture example.
#   data/processed/gibbs_2pno/{design}/{missing}/rep{rep}/        data of one condition
#   results/gibbs_2pno/{design}/{missing}/{method}/blocks/block{block}/   one job: a block of fits
#   results/gibbs_2pno/{design}/{missing}/{method}/blocks/block{block}/rep{rep}/   one fit
#   results/gibbs_2pno/{design}/                                  tables and figures
#   results/gibbs_2pno/mixture/                                   the mixture example


include: "functions/gibbs_2pno.smk"


rule gibbs_simulate:
    # Simulated 2PNO data of a design (complete data shared by a replication's missingness
    # conditions) with the design's missingness, and the truth; for a design that names a
    # dataset, that prepared binary data set with the design's extra missingness (no truth).
    input:
        unpack(gibbs_design_dataset),
    output:
        responses="data/processed/gibbs_2pno/{design}/{missing}/rep{rep}/responses.parquet",
        sidecar="data/processed/gibbs_2pno/{design}/{missing}/rep{rep}/responses.json",
        truth="data/processed/gibbs_2pno/{design}/{missing}/rep{rep}/truth.csv",
    params:
        design=gibbs_design_config,
        seed=gibbs_data_seed,
        missing_seed=gibbs_missing_seed,
    wildcard_constraints:
        design=gibbs_design_pattern(),
    log:
        "logs/data/gibbs_2pno/{design}/{missing}/rep{rep}.log",
    conda:
        ENV
    script:
        "../scripts/gibbs_simulate.py"


rule fit_gibbs_2pno:
    # One method (gibbs | gibbs_omit | gibbs_seed | nuts) on a block of one condition's
    # replications (the design's block_size of them): the Gibbs samplers sweep every replication's chains in one
    # vectorized program, NUTS fits them one after another; each replication's draws,
    # diagnostics, estimates, item and person tables and model checks go to rep{rep}/ in the
    # block's folder, which is what the rules after it read.
    input:
        responses=each_fit(gibbs_block, "data/processed/gibbs_2pno/{design}/{missing}/rep{rep}/responses.parquet"),
        truth=each_fit(gibbs_block, "data/processed/gibbs_2pno/{design}/{missing}/rep{rep}/truth.csv"),
    output:
        directory("results/gibbs_2pno/{design}/{missing}/{method}/blocks/block{block}"),
    params:
        study=gibbs_study_config,  # a rerun trigger: the script reads its settings from the config
        reps=each_fit(gibbs_block, rep_of),
        seeds=each_fit(gibbs_block, gibbs_fit_seed),
    wildcard_constraints:
        design=gibbs_design_pattern(),
        method="gibbs|gibbs_omit|gibbs_seed|nuts",
        block=r"\d+",
    threads: gibbs_fit_threads
    log:
        "logs/gibbs_2pno/{design}/{missing}/{method}/block{block}.log",
    conda:
        ENV
    script:
        "../scripts/gibbs_fit.py"


rule gibbs_tables:
    # Every fit of a design: recovery, R-hat/ESS, Gibbs against NUTS, augmented against
    # omitted missing cells, timings with ESS per second, and the figures. Input: the blocks'
    # folders; params: the fits' files in them.
    input:
        blocks=gibbs_fit_blocks,
    output:
        fits="results/gibbs_2pno/{design}/fits.csv",
        recovery="results/gibbs_2pno/{design}/recovery.csv",
        diagnostics="results/gibbs_2pno/{design}/diagnostics.csv",
        nuts="results/gibbs_2pno/{design}/gibbs_vs_nuts.csv",
        missing="results/gibbs_2pno/{design}/augment_vs_omit.csv",
        timings="results/gibbs_2pno/{design}/timings.csv",
        figure_trace=report("results/gibbs_2pno/{design}/figures/trace.png", caption="../report/gibbs_trace.rst",
                            category="gibbs_2pno", subcategory="{design}"),
        figure_rank=report("results/gibbs_2pno/{design}/figures/rank.png", caption="../report/gibbs_rank.rst",
                           category="gibbs_2pno", subcategory="{design}"),
        figure_autocorrelation=report("results/gibbs_2pno/{design}/figures/autocorrelation.png",
                                      caption="../report/gibbs_autocorrelation.rst", category="gibbs_2pno",
                                      subcategory="{design}"),
        figure_recovery=report("results/gibbs_2pno/{design}/figures/recovery.png",
                               caption="../report/gibbs_recovery.rst", category="gibbs_2pno",
                               subcategory="{design}"),
        figure_intervals=report("results/gibbs_2pno/{design}/figures/intervals.png",
                                caption="../report/gibbs_intervals.rst", category="gibbs_2pno",
                                subcategory="{design}"),
    params:
        fits=gibbs_fit_files("fit.json"),
        estimates=gibbs_fit_files("estimates.csv"),
    wildcard_constraints:
        design=gibbs_design_pattern(),
    log:
        "logs/gibbs_2pno/{design}/tables.log",
    conda:
        ENV
    script:
        "../scripts/gibbs_tables.py"


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
