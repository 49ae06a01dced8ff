"""bayesirt: Bayesian and variational item response theory with missing responses."""

from bayesirt import runtime as _runtime

__version__ = "0.1.0"

# a process-wide XLA setting that must precede JAX's backend (bayesirt.runtime says why)
_runtime.keep_reductions_in_xla()
