"""Fitting IRT and DCM models to arrays: one module per method, one calling convention.

Every method module has a ``fit``, called as

    fit(key, y, structure, settings, *, init=None, label="<method>")

``key``
    a JAX PRNG key, always first (a deterministic method, MML or EM, accepts and ignores it);
``y``
    the data: responses (N, J), -1 for missing; for the DCM methods (``bbvi``,
    ``collapsed_vi``, ``dcm_em``) the prepared ``bbvi.Problem`` (responses and Q-matrix,
    ``bbvi.prepare(y, q)``), which carries the model's structure too, so these take
    ``fit(key, problem, settings, ...)``;
``structure``
    the model's structure: ``models.irt2pl.Structure`` (vibo, mfvi), ``models.mgrm.Structure``
    (iwae, iwavb), ``models.factorized_grm.Structure`` or ``models.mixture_grm.Structure``
    (grm_advi), ``mml.Structure``, ``models.twopno.Priors`` (gibbs: the 2PNO's structure is
    y's shape), an ``advi.Model`` (the generic ADVI fit);
``settings``
    one frozen ``<Method>Settings``; a method run by the training driver carries its
    ``train: TrainSettings``, a sampler its ``sampler: SamplerSettings``;
``init``
    starting values (each ``fit`` documents their form); ``label`` names the run in the log.

Results: ``training.FitResult`` (the optimisation methods), ``sampling.SampleResult``
(samplers), ``mml.MMLFit``, ``dcm_em.EMResult``, ``grm_advi.GRMADVIFit``.

The method modules:

``advi``           mean-field ADVI of any ``advi.Model`` (persons as local parameters, minibatches)
``grm_advi``       the factorized GRM (and its mixture extension) by mean-field ADVI, on arrays
``vibo``           VIBO: amortized variational IRT (2PL/GRM) with a product-of-experts encoder
``mfvi``           per-person mean-field VI for the same models, VIBO's non-amortized baseline
``iwae``           importance-weighted autoencoder for multidimensional GRM factor analysis
``iwavb``          importance-weighted adversarial VB: IWAE with an implicit encoder
``mml``            marginal maximum likelihood of unidimensional GRMs by quadrature (L-BFGS)
``gibbs``          data-augmentation Gibbs sampler of the two-parameter normal ogive model
                   (its sweep: ``gibbs_sweep``)
``gibbs_mixture``  Gibbs sampler of a two-component Gaussian mixture (a kernel for ``sampling``)
``bbvi``           black-box VI (score-function gradients) of the LCDM; ``prepare`` the data
``collapsed_vi``   collapsed VI of the LCDM (profiles summed out)
``collapsed_nuts`` NUTS on the collapsed LCDM (``run_collapsed_nuts``, no ``fit``: a reference)
``dcm_em``         EM marginal maximum likelihood of the LCDM
``objectives``     imputation-aware log-likelihoods for ``grm_advi`` (missing responses)

the uncertainty of a fit:

``mml_information``  standard errors of marginal-ML item parameters (observed information)
``mml_posterior``    marginal log-likelihood, EAP abilities and predictions at given item parameters
``grm_laplace``      the factorized GRM's item posterior by Laplace at its marginal mode (corrects VI's sds)
``psis``             Pareto k-hat of a variational approximation (PSIS)
``bbvi_psis``        the log importance ratios behind a BBVI fit's k-hat

and the drivers they run on (not model fits; key first too):

``training``       ``train(loss_fn, params, key, ...)``: the optimisation loop, stopping rules
``sampling``       ``sample(key, init_fn, step_fn, ...)``: the Markov-chain driver
``posterior_summary`` ``summary_table(idata)``: R-hat, ESS and MCSE of the draws, ``convergence``
``nuts``           ``run_nuts(key, log_density, init, settings)``: numpyro NUTS on a log-density

The modules are imported on first use (``bayesirt.inference.vibo`` or attribute access on this
package), so that a process that needs one of them, such as a chain worker importing
``gibbs``, does not pay for the others (numpyro, pandas, TFP).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

METHOD_MODULES = (
    "advi",
    "bbvi",
    "collapsed_nuts",
    "collapsed_vi",
    "dcm_em",
    "gibbs",
    "gibbs_mixture",
    "grm_advi",
    "iwae",
    "iwavb",
    "mfvi",
    "mml",
    "objectives",
    "vibo",
)
DRIVER_MODULES = ("nuts", "sampling", "training")
# name -> module that defines it
_NAMES = {
    "TrainSettings": "training",
    "FitResult": "training",
    "SamplerSettings": "sampling",
    "SampleResult": "sampling",
}

__all__ = [*METHOD_MODULES, *DRIVER_MODULES, *_NAMES]

if TYPE_CHECKING:  # for readers and type checkers; at run time ``__getattr__`` imports lazily
    from bayesirt.inference import (  # noqa: F401  (names for readers; __getattr__ imports them)
        advi,
        bbvi,
        collapsed_nuts,
        collapsed_vi,
        dcm_em,
        gibbs,
        gibbs_mixture,
        grm_advi,
        iwae,
        iwavb,
        mfvi,
        mml,
        nuts,
        objectives,
        sampling,
        training,
        vibo,
    )
    from bayesirt.inference.sampling import SampleResult, SamplerSettings  # noqa: F401  (as above)
    from bayesirt.inference.training import FitResult, TrainSettings  # noqa: F401  (as above)


def __getattr__(name: str):
    if name in METHOD_MODULES or name in DRIVER_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
