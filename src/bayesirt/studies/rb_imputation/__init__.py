"""Study ``rb_imputation`` (seed 000): the factorized GRM fitted by mean-field ADVI on responses
with missing cells, comparing how the missing cells enter the objective
(``inference.variational.objectives``): ``zero_fill`` (left out), ``naive_average`` (the mean over M imputed
copies of the log-likelihood), ``rao_blackwell`` (the log of the mean over M copies of the
likelihood, per person; ``rao_blackwell_batch`` per minibatch, the seed's code taken literally)
and ``exact_marginal`` (the M -> infinity limit), each against the complete-data reference fit
and, on simulated data, the truth. ``n_dimensions`` > 1 fits the mixture GRM of seed section 1.3.

One replication: complete-data reference fit (``complete``) -> missingness injected
(``missing``, e.g. mcar15) -> the pairwise ordinal stacking imputation model fitted, checked
and scored on the hidden cells -> one fit per objective and M (all with one seed) -> the error
tables against the reference, across replications, and the figures.

In the workflow, one job fits one objective and M on a block of replications (``block_size``
of them; ``methods.fit_block``, one vectorized program of ``inference.execution.bulk``), each
replication's results as its single fit's up to float32 rounding.

Modules: ``conditions`` (the fits a config asks for, their blocks; parse time), ``settings``
(config checks, the settings of the fits), ``data`` (responses, truth, imputation model),
``methods`` (the reference and the objectives' fits, ``fit_block``, ``run_replication``),
``tables`` (errors, summaries, the Jensen claim), ``figures``.
"""
