"""Study ``dcm_bbvi`` (seed 002): black-box variational inference for the LCDM (a diagnostic
classification model with a Q-matrix), the seed's Rao-Blackwellized score-function gradients
with block coordinate ascent (``bbvi``) and the same with control variates (``bbvi_cv``),
against exact references: EM marginal maximum likelihood (``em``), collapsed VI with the
profiles summed out (``collapsed_vi``) and NUTS on the collapsed model (``nuts``, the posterior
reference, on the designs of ``nuts_designs``).

One fit: a design (``seed``: 1,000 x 30, 2 attributes; ``larger``: 2,000 x 20, 4 attributes),
an MCAR rate (condition ``mcar<percent>``) and a replication -> simulated responses, truth and
Q-matrix -> one method (all methods of a data set share one seed) -> a record with the
classification accuracy against the true profiles, the coefficients' recovery and, for BBVI,
the gradient variance with and without control variates -> the study's tables and figures.

A job fits a block of a condition's replications (the design's ``block_size``): the
optimisation methods of the training driver as one vectorized program, EM and NUTS one after
another (``methods.fit_block``); each replication keeps its own data, seed and record.

Modules: ``conditions`` (designs, the fits a config asks for and their blocks; parse time),
``settings`` (config checks, the methods' settings), ``data`` (simulation; ``Problem``, a data
set as the methods take it), ``methods`` (the five methods, single fits and blocks, the oracle
accuracy), ``tables`` (a fit's estimates and scores; the study's tables), ``figures``.
"""
