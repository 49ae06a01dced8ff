"""The models: likelihoods, priors, parameter transforms and starting values, on arrays.

Each module holds one model family's densities and helpers (no fitting); the methods
of ``bayesirt.inference`` fit them.

One likelihood signature for every model: ``log_likelihood(params, y, ...)`` gives each
person's log-likelihood, shape (..., N), with the parameters first (a dict; ``irt2pl`` names its
item blocks ``items``), the responses second (integer codes, -1 for missing: a missing cell
contributes nothing), then the person draws where the parameters do not hold them (``mgrm``'s
``z``, ``irt2pl``'s ``theta``) and the model's structure or link. The per-cell link functions
(``grm.log_prob``, ``twopno.cell_log_prob``) take the responses and a linear predictor instead;
they are the pieces of those likelihoods, not models. ``tests/unit/test_model_contract.py`` holds
every model to the signature.

``grm``              the graded response model's category probabilities: the one GRM likelihood
``grm_cumulative``   the same probabilities from cumulative ones (the imputation objectives' forms)
``irt2pl``           logistic IRT with K-dimensional abilities: 1PL, 2PL (binary) and the GRM (ordinal)
``factorized_grm``   the factorized GRM (seed 000, sections 1-2), fitted by ``inference.variational.grm_advi``
``mixture_grm``      the discrimination-weighted mixture GRM (seed 000, section 1.3)
``mgrm``             the multidimensional logistic GRM for item factor analysis (seed 003)
``mgrm_structure``   its structure and the maps from its parameters to loadings, cuts, correlations
``mgrm_values``      its starting values and conversions to and from natural values
``twopno``           the two-parameter normal ogive (2PNO) and 2PL binary models (seed 001)
``twopno_responses`` the checks of a binary response matrix and a data-driven starting point
``lcdm``             the log-linear cognitive diagnosis model with a Q-matrix: the one LCDM likelihood
``lcdm_design``      its profiles, item features, design tensor and input checks
``lcdm_monotone``    its optional monotonicity constraints
"""
