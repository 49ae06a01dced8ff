"""Model checks for IRT models with missing responses: item fit, person fit, local dependence,
posterior-predictive replications.

Every model (graded response model, 2PL/2PNO binary, LCDM) enters as a :class:`LatentGrid`:
prior weights of Q latent states and each item's category probabilities in each state. The
checks need nothing else, so one implementation serves every model and every fitting method
(plug in a point estimate of the item values; see the constructors ``grm_grid``,
``twopno_grid``, ``lcdm_grid``).

Missing responses (coded -1) are handled by never comparing anything at a missing cell:

* posteriors over the states use each person's observed cells only;
* ``item_fit`` (an S-X2-type statistic) groups the persons who answered an item by their
  leave-one-out expected score E[Y_nj | the person's other observed responses] instead of the
  summed score, which is not comparable across persons with different missing items; its
  expected counts are sums of each person's leave-one-out predictive probabilities;
* ``person_fit`` (lz) and ``residual_correlations`` (Q3) sum or correlate over observed cells
  (pairwise for Q3);
* ``replicate`` draws replicated data sets with each person's missing mask held fixed, so a
  discrepancy computed on replicated data sees exactly the cells the observed one did.

``sx2_complete`` is the classical Orlando & Thissen (2000) S-X2 (Kang & Chen 2008 for
polytomous items), for complete data only; it is the statistic to cross-check against other
software.

The grid is a point estimate of the item values: discrepancies do not propagate item
parameter uncertainty, and chi-square reference distributions are approximate (the df
subtract the number of estimated item parameters by convention). ``predictive_p_values``
calibrates any statistic by simulation instead.

The modules, by concern (the names above are importable from this package, as before):

``latent_grid``       the :class:`LatentGrid` type and the numerics the checks share
``nodes``             how many quadrature nodes a grid needs (the items' information)
``grids``             the grid of each model: ``grm_grid``, ``twopno_grid``, ``lcdm_grid``
``prepared``          responses checked against a grid, held with the arrays the checks read
``posteriors``        person posteriors, leave-one-out predictives, summed-score distributions
``replication``       completed and replicated data sets, predictive p-values
``pooling``           observed-against-expected tables: pooling, Pearson's statistic, df
``item_fit``          the item fit with missing responses and its table for one item
``sx2``               the classical S-X2 for complete data
``person_fit``        lz person fit
``local_dependence``  Q3 residual correlations and each item's largest one
``all_checks``        ``check``: every check of one fit and a summary
"""

from bayesirt.evaluation.fit_checks.all_checks import FitChecks, check  # noqa: F401  (the package's interface)
from bayesirt.evaluation.fit_checks.grids import grm_grid, lcdm_grid, twopno_grid  # noqa: F401  (as above)
from bayesirt.evaluation.fit_checks.item_fit import item_fit, observed_expected  # noqa: F401  (as above)
from bayesirt.evaluation.fit_checks.latent_grid import LatentGrid  # noqa: F401  (as above)
from bayesirt.evaluation.fit_checks.local_dependence import (  # noqa: F401  (as above)
    local_dependence,
    max_abs_residual_correlation,
    residual_correlations,
)
from bayesirt.evaluation.fit_checks.nodes import (  # noqa: F401  (as above)
    MAX_NODES,
    MIN_NODES,
    NODE_STEP,
    SPACING_PER_SD,
    information,
    nodes_for,
)
from bayesirt.evaluation.fit_checks.person_fit import person_fit  # noqa: F401  (as above)
from bayesirt.evaluation.fit_checks.posteriors import (  # noqa: F401  (as above)
    leave_one_out_predictive,
    person_posteriors,
    summed_score_distribution,
)
from bayesirt.evaluation.fit_checks.replication import complete, predictive_p_values, replicate  # noqa: F401  (as above)
from bayesirt.evaluation.fit_checks.sx2 import sx2_complete  # noqa: F401  (as above)
