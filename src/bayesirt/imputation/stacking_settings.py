"""The settings of the stacking imputation model: its sub-models' coding and priors, the
Laplace fit and the stacking weights' ridge. In their own module because both the fit
(``imputation.stacking``) and the sub-models (``imputation.stacking_submodels``) read them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StackingSettings:
    predictor: str = "numeric"  # "numeric" (one slope) or "onehot" (one coefficient per category)
    slope_scale: float = 2.5  # Normal(0, s) prior on each regression coefficient
    first_cut_scale: float = 5.0  # Normal(0, s) prior on the first cut (logit scale)
    increment_scale: float = 3.0  # HalfNormal(s) prior on the gaps between cuts
    newton_steps: int = 40
    n_draws: int = 400  # Laplace draws per sub-model (pointwise log-likelihood, PSIS-LOO)
    ridge: float = 1e-6  # on the stacking logits (the objective is a per-person average per item)
    seed: int = 0
