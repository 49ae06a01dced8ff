"""Study ``amortized_ifa`` (seed 003): IWAE against IWAVB for multidimensional GRM item factor
analysis.

Designs (one per entry of ``studies.amortized_ifa.designs`` in the config):

* confirmatory, simulated (paper 4.2 normal latent, 4.3 multimodal latent): a new data set per
  replication (``simulate_design``), one fit per method and number R of importance samples,
  recovery against the truth, held-out log-likelihood;
* exploratory (paper 4.1, IPIP-FFM): one data set (simulated, or a prepared real data set with
  its held-out persons), a scree of held-out log-likelihood over numbers of factors P
  (replication 0 of every P) and, at ``repeat_factors``, repeated fits from different seeds
  whose Geomin-rotated estimates are compared with the best-likelihood fit (Table 1).

The shape of every study, one module per concern:

    conditions.design_fits(name, design, methods)          -> [FitSpec]         (parse time)
    data.simulate_design(design, seed, heldout_fraction)   -> (train, holdout, truth)
    fit.run_fit(train, holdout, truth, spec, ...)          -> records.FitOutput
    aggregate.aggregate_design(records, design, attrs)     -> dict of tidy tables
    aggregate.figures(tables, outputs)                     -> PNG figures
"""

# Only the parse-time part is imported here, so that Snakemake's parse stays cheap; the rest
# is imported by module (``from bayesirt.studies.amortized_ifa import data, fit, aggregate``).
from bayesirt.studies.amortized_ifa.conditions import (STUDY, FitSpec, condition_name, data_replication,
                                                       design_factors, design_fits)

__all__ = ["STUDY", "FitSpec", "condition_name", "design_fits", "design_factors", "data_replication"]
