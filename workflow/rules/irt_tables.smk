# Item and person tables beside every fit of an IRT model (GRM, 2PL, 2PNO) (bayesirt.studies.fit_tables):
#   results/rb_imputation/{dataset}/.../items.csv, persons.csv       (factorized GRM, ADVI)
#   results/amortized_ifa/{design}/{method}_P{factors}_R{samples}/rep{rep}/items.csv, persons.csv   (IWAE, IWAVB)
#   results/vibo/{design}/{missing}/{method}/rep{rep}/items.csv, persons.csv     (2PL)
#   results/gibbs_2pno/{design}/{missing}/{method}/rep{rep}/items.csv, persons.csv   (2PNO)
# items.csv: slope-intercept and IRT form (a, b_k = -d_k / a; MDISC, MDIFF for items on several
# factors); persons.csv: scores and posterior sds per factor with the persons' ids.
# Included after the study files, whose functions (rb_conditions, ifa_responses ...) it uses.


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
        fit=r"reference|(mcar|mar|mnar)\d+(\.\d+)?/rep\d+/[a-z_]+?(_M\d+)?",
    log:
        "logs/rb_imputation/{dataset}/{fit}/irt_tables.log",
    conda:
        ENV
    script:
        "../scripts/irt_tables.py"


rule ifa_irt_tables:
    input:
        record="results/amortized_ifa/{design}/{fitname}/rep{rep}/fit.json",
        responses=ifa_responses,
        person_ids=ifa_fit_person_ids,
    output:
        item_table="results/amortized_ifa/{design}/{fitname}/rep{rep}/items.csv",
        person_table="results/amortized_ifa/{design}/{fitname}/rep{rep}/persons.csv",
    wildcard_constraints:
        design=ifa_design_pattern(),
        fitname=r"(iwae|iwavb)_P\d+_R\d+",
    log:
        "logs/amortized_ifa/{design}/{fitname}/rep{rep}.irt_tables.log",
    conda:
        ENV
    script:
        "../scripts/irt_tables.py"


rule vibo_irt_tables:
    input:
        record="results/vibo/{design}/{missing}/{method}/rep{rep}/fit.json",
        responses="data/processed/vibo/{design}/{missing}/rep{rep}/responses.parquet",
    output:
        item_table="results/vibo/{design}/{missing}/{method}/rep{rep}/items.csv",
        person_table="results/vibo/{design}/{missing}/{method}/rep{rep}/persons.csv",
    wildcard_constraints:
        design=vibo_design_pattern(),
        method="vibo_one_prior|vibo_prior_per_missing|mfvi|mml|nuts",
    log:
        "logs/vibo/{design}/{missing}/{method}/rep{rep}.irt_tables.log",
    conda:
        ENV
    script:
        "../scripts/irt_tables.py"


rule gibbs_irt_tables:
    input:
        record="results/gibbs_2pno/{design}/{missing}/{method}/rep{rep}/fit.json",
        responses="data/processed/gibbs_2pno/{design}/{missing}/rep{rep}/responses.parquet",
    output:
        item_table="results/gibbs_2pno/{design}/{missing}/{method}/rep{rep}/items.csv",
        person_table="results/gibbs_2pno/{design}/{missing}/{method}/rep{rep}/persons.csv",
    wildcard_constraints:
        design=gibbs_design_pattern(),
        method="gibbs|gibbs_omit|nuts",
    log:
        "logs/gibbs_2pno/{design}/{missing}/{method}/rep{rep}.irt_tables.log",
    conda:
        ENV
    script:
        "../scripts/irt_tables.py"
