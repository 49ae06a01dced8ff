"""Judging fits: log-likelihoods, recovery, rotation, tables and verdicts, from any method's output.

``loglik``         approximate marginal log-likelihood of responses under a fitted multidimensional GRM
``person_loglik``  per-person marginal log-likelihood by importance sampling, one evaluator for every method
``recovery``       recovery metrics of estimates against reference values (the truth, or another fit)
``rotation``       rotation and alignment of exploratory factor solutions (seed 003)
``irt_tables``     item and person tables in the forms psychometricians read (as mirt or lavaan print them)
``verdicts``       verdicts on a report's claims from replicated comparisons
``fit_checks``     model checks that work with missing responses: item fit, local dependence, person fit (a package)
"""
