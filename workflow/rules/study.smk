# The rules every study shares, in one shape: the data of one replication, the fitting job of a
# block of a condition's replications, and the tables and figures of a study's fits (the report
# is report.smk's). A study's rule file registers its jobs with data_job, block_job and
# tables_job (common.smk) and keeps only the rules that are its own; this file, included after
# every study, makes one rule of each registered job. Rule names are the study's (the fitting
# rules are named fit_*: the SLURM profile gives each its resources). A directive whose value
# Snakemake evaluates again when a job runs (script:) must not read the loop variable
# (template_script says why); the others are evaluated once, here.


for _job in DATA_JOBS:

    rule:
        name:
            _job.name
        input:
            unpack(_job.input),
        output:
            **{key: f"{_job.folder}/{file}" for key, file in _job.files.items()},
        params:
            **_job.params,
        wildcard_constraints:
            **_job.constraints,
        log:
            _job.log,
        conda:
            ENV
        script:
            template_script(locals())

    keep_recorded_code(_job.name)


for _job in BLOCK_JOBS:

    rule:
        name:
            _job.name
        input:
            **{key: each_fit(_job.fits, value) for key, value in _job.data.items()},
            **_job.input,
        output:
            directory(f"{_job.folder}/blocks/block{{block}}"),
        params:
            **_job.params,
            reps=each_fit(_job.fits, rep_of),
            seeds=each_fit(_job.fits, _job.seed),
        wildcard_constraints:
            block=r"\d+",
            **_job.constraints,
        threads: _job.threads
        log:
            _job.log,
        conda:
            ENV
        script:
            template_script(locals())

    keep_recorded_code(_job.name)


for _job in TABLES_JOBS:

    rule:
        name:
            _job.name
        input:
            blocks=_job.blocks,
            **_job.input,
        output:
            **_job.outputs,
        params:
            **_job.params,
        wildcard_constraints:
            **_job.constraints,
        log:
            _job.log,
        conda:
            ENV
        script:
            template_script(locals())

    keep_recorded_code(_job.name)
