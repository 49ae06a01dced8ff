"""The models: likelihoods, priors, parameter transforms and starting values, on arrays.

Each module holds one model family's densities and helpers (no fitting); the methods
of ``bayesirt.inference`` fit them.

One likelihood signature for every model: ``log_likelihood(params, y, structure)`` gives each
person's log-likelihood, shape (..., N). ``params`` (a dict) holds everything the likelihood
conditions on: the item parameters and, where the persons' latent values are not summed out,
those values as ``ability`` (draws with leading axes where a method has several: ``mgrm``'s
factor scores, ``irt2pl``'s abilities); ``y`` the responses (integer codes, -1 for missing: a
missing cell contributes nothing); ``structure`` the model's static description (its
``Structure``, the LCDM's ``Design``, the 2PNO's link). The per-cell link functions
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
