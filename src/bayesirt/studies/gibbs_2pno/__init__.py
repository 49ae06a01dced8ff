"""Study ``gibbs_2pno`` (seed 001): the vectorized, multi-chain data-augmentation Gibbs sampler
for the two-parameter normal ogive (2PNO) model, with missing responses augmented (``gibbs``)
or omitted (``gibbs_omit``), against NUTS on the same marginal posterior (``nuts``); and the
seed's two-component Gaussian mixture fitted by its own Gibbs sampler (``gibbs_mixture``).

A condition is (design, missingness, method, replication). Every replication of a simulated
design draws one complete 2PNO data set with its truth; a design that names a ``dataset`` (a
prepared binary data set of the config) fits those real responses, natural missing cells
included, with no truth. The design's missingness (``mcar0``, ``mcar20``, ...: kind and percent
of all cells) then hides cells. All methods of a condition share the data and the fit seed;
``gibbs_omit`` is fitted only where cells are missing, ``nuts`` only where a design sets
``nuts: true``.

One fit flows as
    conditions.conditions(config)                  -> [Condition, ..., MixtureCondition]
    settings.Settings.from_config(config)          -> Settings (priors, samplers, mixture)
    data.simulate_condition / observed_condition   -> (ResponseMatrix, truth)
    methods.fit(responses, truth, cond, settings)  -> MethodResult (records.write_fit writes it)
and the workflow fits a block of a condition's replications in one job (the design's block_size,
conditions.condition_blocks) as
    methods.fit_block([Replication, ...], settings) -> [MethodResult, ...], each as ``fit`` gives it
and one design's fits as
    tables.aggregate(records, estimates)           -> dict of tidy tables
    figures.figures(shown, posteriors, outputs)    -> PNG figures (figures.shown_fit picks the fit)
(the mixture: data.simulate_mixture, methods.fit with a MixtureCondition, figures.mixture_figure).

Modules: ``conditions`` (the fits, names; standard library only), ``settings`` (config checks
and sampler settings; no JAX), ``data``, ``methods`` (the registry ``METHODS`` and ``fit``),
``tables``, ``figures``.
"""

# Only a name, never the function ``conditions``: bound on the package, it would hide the
# submodule of the same name from ``from bayesirt.studies.gibbs_2pno import conditions``.
from bayesirt.studies.gibbs_2pno.conditions import STUDY

__all__ = ["STUDY"]
