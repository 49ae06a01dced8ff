"""The amortized_ifa methods as seed 003 wrote them: ``iwae_seed`` and ``iwavb_seed``.

They run the same IWAE and IWAVB code as ``iwae`` and ``iwavb`` (and the same bulk path), with
the seed's settings where ours differ:

* AdamW on every parameter, decoder included, at a cyclical learning rate between the base
  and five times it, no clipping, Kaiming and Xavier starting values
  (``inference.variational.seed_training``), instead of our exponential decay, clipping, decoder without
  weight decay and data-based starting cuts;
* the seed's stopping rule, ``training.TrainSettings(stopping="best")``: every 100 steps the
  mean IW-ELBO of those steps, stopping once 500 of them set no new best; the step cap is ours
  and each record says whether the fit met the seed's rule (``converged``) or hit the cap;
* IWAVB without our additions: the seed's encoder z = MLP([x, eps]) (no noise branch,
  ``inference.variational.seed_encoder``), a plain MLP discriminator (no quadratic term), no gauge
  penalty, and the weight -T + |z~|^2 / 2 + log p(x, z) of Algorithm 2 (no Jacobian).

Every value comes from the design's ``seed_training``, ``iwae_seed`` and ``iwavb_seed``
(schema defaults: the seed's section 4.2; ``config/paper.yaml`` sets 4.1's and 4.3's), and the
table ``docs/reproduction/data/amortized_ifa/seed_settings.yaml`` ties each to the seed.
"""

from __future__ import annotations

from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import iwae, iwavb
from bayesirt.inference.variational.seed_training import SeedOptimizer
from bayesirt.studies.amortized_ifa.conditions import Condition
from bayesirt.studies.amortized_ifa.settings import Design

SEED_METHODS = ("iwae_seed", "iwavb_seed")
# IWAVB as Algorithm 2 writes it, our additions off (``inference.variational.iwavb``'s switches):
ENCODER_FORM = "seed"  # z = Encoder(x, eps), one network taking the noise as an input (2.5, 3.1)
QUADRATIC_TERM = False  # T is a plain feedforward network (3.1)
GAUGE_WEIGHT = 0.0  # no penalty on the standardised draws (Algorithm 2 has none)
JACOBIAN_IN_WEIGHT = False  # w = exp[-T(x, z~) + |z~|^2 / 2 + log p(x, z)] (Algorithm 2)


def optimizer(design: Design) -> SeedOptimizer:
    t = design.seed_training
    return SeedOptimizer(weight_decay=t.weight_decay, max_ratio=t.max_ratio, half_cycle=t.half_cycle)


def train_settings(design: Design) -> TrainSettings:
    """The driver's settings for a seed method: the seed's batch and stopping rule (one check
    per window, so each window is one of the seed's 100-step means; no minimum). The driver's
    own learning rate and decay are unused: the seed's optimiser replaces them."""
    t = design.seed_training
    return TrainSettings(
        batch_size=t.batch_size,
        max_steps=t.max_steps,
        min_steps=0,
        check_every=t.window,
        window=t.window,
        patience=t.patience,
        stopping="best",
        progress_every=t.progress_every,
    )


def iwae_seed_settings(spec: Condition, design: Design) -> iwae.IWAESettings:
    s = design.iwae_seed
    return iwae.IWAESettings(
        n_importance=int(spec.n_importance),
        hidden=s.hidden,
        learning_rate=s.learning_rate,
        weight_decay=design.seed_training.weight_decay,
        seed=optimizer(design),
    )


def iwavb_seed_settings(spec: Condition, design: Design) -> iwavb.IWAVBSettings:
    s = design.iwavb_seed
    return iwavb.IWAVBSettings(
        n_importance=int(spec.n_importance),
        encoder_hidden=s.encoder_hidden,
        discriminator_hidden=s.discriminator_hidden,
        learning_rate=s.learning_rate,
        discriminator_learning_rate=s.discriminator_learning_rate,
        weight_decay=design.seed_training.weight_decay,
        encoder_form=ENCODER_FORM,
        quadratic_term=QUADRATIC_TERM,
        jacobian_in_weight=JACOBIAN_IN_WEIGHT,
        gauge_weight=GAUGE_WEIGHT,
        seed=optimizer(design),
    )
