"""Study ``vibo`` (seed 004): amortized VI with a product-of-experts ability encoder (VIBO)
against non-amortized mean-field VI, MML-EAP and NUTS on simulated IRT data with missing
responses: the binary 2PL (``model: 2pl``, ``data.simulate_binary``) and the graded response
model (``model: grm``) on data shaped like a questionnaire preset (``preset: rwa``: the RWA
scale's 22 items with 9 categories, drawn by ``data.simulate.simulate_factorized_grm``, the
simulator of the rb_imputation and grm_advi studies, as one scale: VIBO's abilities are
unidimensional here). A design that names a ``dataset`` instead (a prepared data set of the
config, e.g. the real RWA data with ``model: grm``) fits those responses, natural missing cells
included: it has no truth, so its methods are compared with each other (agreement with
MML-EAP, hidden-cell prediction, held-out log-likelihood), and it counts in no claim on
accuracy.

A condition is (design, missingness, method, replication). Every replication of a design draws
one complete data set: training persons, new persons from the same population (held-out
log-likelihood, amortized scoring) and the truth. The design's missingness (``mcar0``,
``mcar20``, ``mnar20``, ...: kind and percent of all cells, through ``data.missingness.inject``)
then hides cells of both, and a further ``score_fraction`` of the training persons'
still-observed cells is hidden MCAR and scored (missing-response prediction); a 0% condition
hides none (complete data, no missing-response prediction). All missingness
conditions of a replication share the complete data, and all methods of a condition share the
data and the fit seed. On real data a replication is a random split of the persons into
training and new ones and its own missingness masks.

Methods: ``vibo_one_prior`` (no expert for a missing response, one prior expert),
``vibo_prior_per_missing`` (the seed's product: a prior expert per missing response),
``vibo_seed`` (that product with the settings seed 004 states, ``seed_methods``),
``vibo_average_seed`` (the averaging encoder the seed compares it with), ``mfvi``
(per-person mean-field VI), ``mml`` (marginal ML by quadrature with EAP abilities: the
point-estimate anchor, for the unidimensional 2PL and GRM alike) and ``nuts`` (the reference
posterior; only where a design sets ``nuts: true``).

One fit (rules ``vibo_simulate``, ``fit_vibo``, ``vibo_tables`` / ``vibo_observed_tables``);
a fit job fits a block of a condition's replications (the design's
``block_size``, ``conditions.condition_blocks``), each evaluated as a single fit:

    conditions.conditions(config)                       -> [Condition]  (parse time, plain Python)
    settings.check(config); settings.Settings.from_config(config)   (parse time / once per job)
    data.condition_data(design, missing, seed, ...)     -> (train, hidden, holdout, truth)
    methods.fit(train, hidden, holdout, truth, cond, settings=..., seed=...) -> base.MethodResult
    methods.fit_block([methods.Replication], settings)  -> [base.MethodResult]  (one job)
    tables.aggregate(records, estimates, observed=...)  -> dict of tidy tables; claim_verdicts
    figures.figures(tables, outputs, observed=...)      -> PNG figures

Modules: ``conditions`` (standard library only), ``settings`` (config checks, design shapes,
``Settings``; no JAX), ``data``, ``methods`` (the ``METHODS`` registry, ``fit_block``),
``evaluation`` (the evaluation every method shares), ``tables``, ``figures``. This file
imports nothing: Snakemake imports ``conditions`` and ``settings`` at parse time.
"""
