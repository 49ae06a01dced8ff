"""What seed 001 states about its 2PNO Gibbs sampler, in one place (standard library only).

The seed ("Example 2: 2PNO-IRT") describes Albert's plain data-augmentation sampler: each sweep
draws Z, then theta, then the item pair xi_j = (a_j, d_j), and nothing else. Our ``gibbs`` adds
moves along the model's symmetries after those three blocks (parameter expansion,
``inference.samplers.gibbs_expansion``); ``gibbs_seed`` leaves them out. The seed's ability prior is the
standard normal (``studies.gibbs_2pno.priors``, the schema's defaults); the seed names no values
for the difficulty and discrimination priors, nor chains, burn-in or draws, so ``gibbs_seed``
runs with the study's (``priors`` and ``gibbs`` in the config, this project's choice) and the
two samplers differ only in the expansion moves.

The seed fits complete data; where a design hides cells, ``gibbs_seed`` draws their latent
normals untruncated, as ``gibbs`` does (this project's choice: it leaves the posterior
unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SeedSampler:
    """The seed's sampler as ``inference.samplers.gibbs.kernel`` takes it."""

    # "The Gibbs sampling involves 3 of the sampling processing, namely, a sampling of the
    # augmented Z parameters, a sampling of person trait theta_i, and a sampling of the item
    # parameter xi_j" (Example 2, Latent Variables): no expansion moves
    expand: bool = False
    # the seed has no missing cells; this project's choice (see the module's docstring)
    missing: str = "augment"


SEED_SAMPLER = SeedSampler()
