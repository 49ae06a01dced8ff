"""The designs of ``bayesirt.data.simulate_mgrm`` by name (seed 003, section 4), in plain Python:
the workflow reads a preset's number of factors when it parses the config (standard library
only, so that parsing imports neither numpy nor pandas)."""

PRESETS = {
    # IPIP-FFM Big Five shape (paper 4.1): 50 items, 5 categories, 5 factors, 10 items each.
    "ipip": {"n_items": 50, "n_categories": 5, "n_factors": 5, "structure": "simple"},
    # normal-latent confirmatory design (paper 4.2)
    "normal_p5": {"n_items": 50, "n_categories": 5, "n_factors": 5, "structure": "simple"},
    # multimodal designs (paper 4.3)
    "mixture_p1": {"n_items": 20, "n_categories": 3, "n_factors": 1, "structure": "simple", "latent": "mixture"},
    "mixture_p3": {"n_items": 45, "n_categories": 3, "n_factors": 3, "structure": "simple", "latent": "mixture"},
    # the benchmark design of iwae_grm_8k / iwavb_grm_8k
    "bench_p4": {"n_items": 12, "n_categories": 3, "n_factors": 4, "structure": "simple"},
}
