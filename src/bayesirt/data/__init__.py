"""Response data: real questionnaires, your own files, simulations, and what is done to them.

Response matrices are (N, J) integers, -1 for missing, whichever module made them.

``table``           your own questionnaire as a response matrix: a CSV, TSV or parquet file
``table_files``     a table file read into text cells, before it is checked against the config
``examples``        example questionnaires that the installed package ships, as CSV
``ipip``            IPIP-FFM (Big-Five Factor Markers) from Open Psychometrics, screened
``ipip_synthetic``  synthetic files in the raw format of the IPIP-FFM ``data-final.csv`` (fixtures)
``rwa``             the Right-Wing Authoritarianism Scale (RWAS) from Open Psychometrics
``download``        fetching raw archives: checksums, retries, atomic writes, a clear message offline
``careless``        careless-responder screening (Urban & Bauer, 2021)
``item_direction``  items keyed the wrong way: corrected item-rest correlations, before a fit
``holdout``         a seeded split of persons into training and held-out parts
``missingness``     hiding observed responses on purpose: MCAR, MAR and MNAR, with a recorded mask
``simulate``        simulated GRM response matrices with known parameters, seeded
``grm_presets``     the questionnaire shapes of ``simulate`` by name
``grm_sampling``    the one numpy sampler of GRM responses, for every simulator
``simulate_binary`` simulated binary responses: 1PL, 2PL and the 2PNO
``simulate_lcdm``   simulated diagnostic-classification data: the LCDM with a Q-matrix (seed 002)
``simulate_mgrm``   simulated item factor analysis data: the multidimensional GRM designs (seed 003)
``mgrm_presets``    the designs of ``simulate_mgrm`` by name
"""
