"""The models: likelihoods, priors, parameter transforms and starting values, on arrays.

Each module holds one model family's densities and helpers (no fitting); the methods
of ``bayesirt.inference`` fit them.

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
