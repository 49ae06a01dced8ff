"""bayesirt: Bayesian and variational item response theory with missing responses."""

__version__ = "0.1.0"
