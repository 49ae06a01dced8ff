"""The models: likelihoods, priors, parameter transforms and starting values, on arrays.

Each module holds one model family's densities and helpers (no fitting); the methods
of ``bayesirt.inference`` fit them.

``grm``             the graded response model's category probabilities: the one GRM likelihood
``irt2pl``          logistic IRT with K-dimensional abilities: 1PL, 2PL (binary) and the GRM (ordinal)
``factorized_grm``  the factorized GRM (seed 000, sections 1-2), fitted by ``inference.grm_advi``
``mixture_grm``     the discrimination-weighted mixture GRM (seed 000, section 1.3)
``mgrm``            the multidimensional logistic GRM for item factor analysis (seed 003)
``twopno``          the two-parameter normal ogive (2PNO) and 2PL binary models (seed 001)
``lcdm``            the log-linear cognitive diagnosis model with a Q-matrix: the one LCDM likelihood
"""
