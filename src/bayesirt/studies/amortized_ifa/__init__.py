"""Study ``amortized_ifa`` (seed 003): IWAE against IWAVB for multidimensional GRM item factor
analysis.

Designs (one per entry of ``studies.amortized_ifa.designs`` in the config):

* confirmatory, simulated (paper 4.2 normal latent, 4.3 multimodal latent): a new data set per
  replication (``data.simulate_design``), one fit per method and number R of importance
  samples, recovery against the truth, held-out log-likelihood;
* exploratory (paper 4.1, IPIP-FFM): one data set (simulated, or a prepared real data set with
  its held-out persons), a scree of held-out log-likelihood over numbers of factors P
  (replication 0 of every P) and, at ``repeat_factors``, repeated fits from different seeds
  whose Geomin-rotated estimates are compared with the best-likelihood fit (Table 1).

One fit: ``settings.Settings.from_config(config)`` gives the design's method, training and
evaluation settings; ``data`` simulates (or reads) its training and held-out persons;
``methods.fit`` trains the method (``methods.METHODS``), scores the held-out persons and tabulates
the estimates as a ``base.MethodResult``, which ``records.write_fit`` writes.

    conditions.conditions(config)                           -> [Condition]          (parse time)
    settings.check(config); settings.Settings.from_config(config)                 (parse time)
    data.simulate_design(design, seed, heldout_fraction)    -> (train, holdout, truth)
    methods.fit(train, holdout, truth, spec, design, evaluation, seed=...) -> MethodResult
    tables.aggregate(record_paths, design, truth_attrs)     -> dict of tidy tables
    figures.figures(tables, outputs)                        -> PNG figures
"""

# Only names of the parse-time part are imported here, so that Snakemake's parse stays cheap;
# the rest is imported by module (``from bayesirt.studies.amortized_ifa import data, methods``).
# (Not the function ``conditions``: it would hide the module of that name.)
from bayesirt.studies.amortized_ifa.conditions import METHODS, STUDY, Condition

__all__ = ["STUDY", "METHODS", "Condition"]
