"""Pareto k-hat of a variational fit (PSIS, Vehtari et al.), the diagnostic of how far an
approximation's draws are from the posterior: log importance ratios log p(y, z) - log q(z) of
draws from the approximation go through ArviZ's Pareto-smoothed importance sampling, whose
shape estimate k-hat says whether importance weighting could repair the approximation. Above
0.7 the ratios' tail is too heavy: the approximation misses parts of the posterior and its
uncertainty should not be read as calibrated. (For models with a latent variable per person,
a mean-field approximation of all of them jointly usually is above 0.7; the record says so
instead of staying silent.)
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("bayesirt")

KHAT_LIMIT = 0.7  # above it PSIS estimates are unreliable (the PSIS paper's threshold)


def khat(log_ratios) -> float:
    """The Pareto k-hat of importance ratios (ArviZ's ``psislw``).

    Parameters
    ----------
    log_ratios : array (S,)
        log p(y, z_s) - log q(z_s) of draws z_s from the approximation q.

    Returns
    -------
    float
        k-hat; nan when a ratio is not finite.
    """
    lw = np.asarray(log_ratios, np.float64).ravel()
    if not np.isfinite(lw).all():
        return float("nan")
    import arviz as az  # here, not at the top: importing ArviZ costs seconds in every workflow job

    _, k = az.psislw(lw - lw.max(), reff=1.0)
    return float(np.asarray(k))


def record(log_ratios, label: str, consequence: str = "do not read its sds as calibrated") -> dict:
    """The record's entry of a VI fit's k-hat, with a warning in the log above ``KHAT_LIMIT``.

    Parameters
    ----------
    log_ratios : array (S,)
        As for :func:`khat`.
    label : str
        The fit's name in the warning.
    consequence : str
        What the warning tells the reader to do (e.g. which sds not to trust).

    Returns
    -------
    dict
        ``{"khat", "draws", "limit", "reliable"}``.
    """
    k = khat(log_ratios)
    reliable = bool(np.isfinite(k) and k <= KHAT_LIMIT)
    if not reliable:
        log.warning(
            "%s: PSIS k-hat %.2f > %.1f: the variational approximation is far from the posterior; %s",
            label,
            k,
            KHAT_LIMIT,
            consequence,
        )
    khat_value = k if np.isfinite(k) else None  # JSON has no nan
    return {"khat": khat_value, "draws": int(np.size(log_ratios)), "limit": KHAT_LIMIT, "reliable": reliable}
