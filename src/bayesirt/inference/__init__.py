"""Fitting IRT and DCM models to arrays: one module per method, one calling convention.

Every method module has a ``fit``, called as

    fit(key, y, structure, settings, *, init=None, label="<method>")

``key``
    a JAX PRNG key, always first (a deterministic method, MML or EM, accepts and ignores it);
``y``
    the data: responses (N, J), -1 for missing; for the DCM methods (``dcm.bbvi``,
    ``dcm.collapsed_vi``, ``dcm.dcm_em``) the prepared ``bbvi.Problem`` (responses and Q-matrix,
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

``variational.advi``            mean-field ADVI of any ``advi.Model`` (persons as local parameters, minibatches)
``variational.grm_advi``        the factorized GRM (and its mixture extension) by mean-field ADVI, on arrays
``variational.vibo``            VIBO: amortized variational IRT (2PL/GRM) with a product-of-experts encoder
``variational.mfvi``            per-person mean-field VI for the same models, VIBO's non-amortized baseline
``variational.iwae``            importance-weighted autoencoder for multidimensional GRM factor analysis
``variational.iwavb``           importance-weighted adversarial VB: IWAE with an implicit encoder
``marginal.mml``                marginal maximum likelihood of unidimensional GRMs by quadrature (L-BFGS)
``samplers.gibbs``              data-augmentation Gibbs sampler of the two-parameter normal ogive model
                                (its sweep: ``samplers.gibbs_sweep``)
``samplers.gibbs_mixture``      Gibbs sampler of a two-component Gaussian mixture (a kernel for ``samplers.sampling``)
``dcm.bbvi``                    black-box VI (score-function gradients) of the LCDM; ``prepare`` the data
``dcm.collapsed_vi``            collapsed VI of the LCDM (profiles summed out)
``dcm.collapsed_nuts``          NUTS on the collapsed LCDM (``run_collapsed_nuts``, no ``fit``: a reference)
``dcm.dcm_em``                  EM marginal maximum likelihood of the LCDM
``variational.objectives``      imputation-aware log-likelihoods for ``variational.grm_advi`` (missing responses)

the uncertainty of a fit:

``marginal.mml_information``    standard errors of marginal-ML item parameters (observed information)
``marginal.mml_posterior``      marginal log-likelihood, EAP abilities and predictions at given item parameters
``marginal.grm_laplace``        the factorized GRM's item posterior by Laplace at its marginal mode (corrects VI's sds)
``variational.psis``            Pareto k-hat of a variational approximation (PSIS)
``dcm.bbvi_psis``               the log importance ratios behind a BBVI fit's k-hat

and the drivers they run on (not model fits; key first too):

``execution.training``          ``train(loss_fn, params, key, ...)``: the optimisation loop, stopping rules
``samplers.sampling``           ``sample(key, init_fn, step_fn, ...)``: the Markov-chain driver
``samplers.posterior_summary``  ``summary_table(idata)``: R-hat, ESS and MCSE of the draws, ``convergence``
``samplers.nuts``               ``run_nuts(key, log_density, init, settings)``: numpyro NUTS on a log-density

The modules live in five subpackages by kind: ``variational`` (the optimisation methods and
what they share: networks, objectives, PSIS), ``samplers`` (Gibbs, NUTS, the Markov-chain
driver and its posterior summaries), ``dcm`` (the LCDM's methods: BBVI and its parts, collapsed
VI and NUTS, EM), ``marginal`` (marginal maximum likelihood, quadrature and Laplace
approximations) and ``execution`` (the training driver, stopping rules, and running blocks of
fits and chains in programs and worker processes). Subpackages and modules are imported on
first use (``bayesirt.inference.variational.vibo``, or attribute access on a package), so that
a process that needs one of them, such as a chain worker importing ``samplers.gibbs``, does not
pay for the others (numpyro, pandas, TFP).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

SUBPACKAGES = ("dcm", "execution", "marginal", "samplers", "variational")
# name -> module that defines it
_NAMES = {
    "TrainSettings": "execution.training",
    "FitResult": "execution.training",
    "SamplerSettings": "samplers.sampling",
    "SampleResult": "samplers.sampling",
}

__all__ = [*SUBPACKAGES, *_NAMES]

if TYPE_CHECKING:  # for readers and type checkers; at run time ``__getattr__`` imports lazily
    from bayesirt.inference import dcm, execution, marginal, samplers, variational  # noqa: F401
    from bayesirt.inference.execution.training import FitResult, TrainSettings  # noqa: F401
    from bayesirt.inference.samplers.sampling import SampleResult, SamplerSettings  # noqa: F401


def __getattr__(name: str):
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
