"""bayesirt: Bayesian and variational item response theory with missing responses."""

from bayesirt import runtime as _runtime

__version__ = "0.1.0"

# process-wide XLA settings that must precede JAX's backend (bayesirt.runtime says why)
_runtime.keep_reductions_in_xla()
_runtime.follow_thread_limit()
