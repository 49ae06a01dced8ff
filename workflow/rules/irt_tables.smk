# Item and person tables beside rb_imputation's complete-data reference fit
# (bayesirt.studies.fit_tables):
#   results/rb_imputation/{dataset}/reference/items.csv, persons.csv  (factorized GRM, ADVI)
# in a rule of its own, because the mixture GRM (n_dimensions > 1) has no such tables. The
# objectives' fits of rb_imputation (rule fit_objective, in blocks), and the fits of
# amortized_ifa (MGRM), vibo (2PL) and gibbs_2pno (2PNO) write theirs in the fitting job
# (thousands of fits at paper scale: a job per table would double the workflow's jobs).
# items.csv: slope-intercept and IRT form (a, b_k = -d_k / a; MDISC, MDIFF for items on several
# factors); persons.csv: scores and posterior sds per factor with the persons' ids.
# Included after the study files, whose functions (rb_datasets, person_ids_of ...) it uses.


include: "functions/irt_tables.smk"


rule rb_irt_tables:
    input:
        record="results/rb_imputation/{dataset}/{fit}/fit.json",
        responses=rb_fit_responses,
        person_ids=rb_fit_person_ids,
    output:
        item_table="results/rb_imputation/{dataset}/{fit}/items.csv",
        person_table="results/rb_imputation/{dataset}/{fit}/persons.csv",
    wildcard_constraints:
        fit="reference",
    log:
        "logs/rb_imputation/{dataset}/{fit}/irt_tables.log",
    conda:
        ENV
    script:
        "../scripts/irt_tables.py"


rule rb_model_checks:
    # Model checks beside the complete-data reference fit (bayesirt.studies.model_checks):
    # item fit and local dependence per item, person fit, and their summary, from items.csv.
    input:
        record="results/rb_imputation/{dataset}/{fit}/fit.json",
        item_table="results/rb_imputation/{dataset}/{fit}/items.csv",
        responses=rb_fit_responses,
    output:
        item_fit="results/rb_imputation/{dataset}/{fit}/item_fit.csv",
        person_fit="results/rb_imputation/{dataset}/{fit}/person_fit.csv",
        global_fit="results/rb_imputation/{dataset}/{fit}/global_fit.json",
    wildcard_constraints:
        fit="reference",
    log:
        "logs/rb_imputation/{dataset}/{fit}/model_checks.log",
    conda:
        ENV
    script:
        "../scripts/model_checks.py"
