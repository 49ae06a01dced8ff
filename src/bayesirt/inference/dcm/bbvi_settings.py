"""The settings of black-box VI for the LCDM (``inference.dcm.bbvi``), in a module of their own so
that the parts of the method (``bbvi_family``, ``bbvi_gradients``) can take them without
importing the module that imports them."""

from __future__ import annotations

from typing import NamedTuple

from bayesirt.inference.execution import training
from bayesirt.models import lcdm


class BBVISettings(NamedTuple):
    """Settings of :func:`bayesirt.inference.dcm.bbvi.fit`.

    Attributes
    ----------
    n_samples : int
        M, samples of q per step for the score-function estimate.
    control_variates : bool
        Whether to use control variates.
    steps_per_block : tuple of int
        Steps for Z, beta, pi, sigma^2 per sweep (the seed's schedule).
    learning_rates : tuple of float
        Adam's learning rate per block.
    init_scale : float
        Initial sd of q(beta_j) per feature.
    priors : lcdm.Priors
        The model's priors.
    monotone : bool
        q on the unconstrained u of ``models.lcdm.monotone_beta``.
    train : training.TrainSettings
        The training driver's settings.
    """

    n_samples: int = 50  # M
    control_variates: bool = False
    steps_per_block: tuple = (10, 20, 20, 30)  # Z, beta, pi, sigma^2 per sweep (the seed's schedule)
    learning_rates: tuple = (0.2, 0.05, 0.05, 0.05)  # Adam, per block
    init_scale: float = 0.2  # initial sd of q(beta_j) per feature
    priors: lcdm.Priors = lcdm.Priors()
    monotone: bool = False  # q on the unconstrained u of models.lcdm.monotone_beta
    train: training.TrainSettings = training.TrainSettings()  # the training driver's settings
