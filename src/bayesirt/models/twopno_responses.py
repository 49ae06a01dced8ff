"""Binary response matrices of the 2PNO and 2PL models (``bayesirt.models.twopno``): the checks of
a matrix and a data-driven starting point.
"""

from __future__ import annotations

import numpy as np


def initial_values(y, link: str = "probit") -> dict:
    """A data-driven starting point (numpy float32): standardized proportion-correct
    abilities, discriminations 1, difficulties from each item's proportion correct.

    With a = 1 and theta ~ N(0, 1) the marginal P(y = 1) of the probit model is
    Phi(-d / sqrt(2)), so d = -sqrt(2) Phi^{-1}(p_j) (logit: d = -logit(p_j) sqrt(1 + pi/8)).

    Parameters
    ----------
    y : array-like (N, J)
        Responses 0/1, -1 for missing.
    link : {"probit", "logit"}
        Link function F (anything but "probit" is taken as the logit).

    Returns
    -------
    dict
        ``ability`` (N,), ``discrimination`` (J,), ``difficulty`` (J,): numpy float32 arrays.
    """
    from scipy.special import logit, ndtri

    y = np.asarray(y)
    obs = y >= 0
    n_obs_item = obs.sum(0)
    p_item = np.clip(np.where(obs, y, 0).sum(0) / np.maximum(n_obs_item, 1), 0.02, 0.98)
    p_item = np.where(n_obs_item > 0, p_item, 0.5)
    if link == "probit":
        d = -np.sqrt(2.0) * ndtri(p_item)
    else:
        d = -logit(p_item) * np.sqrt(1 + np.pi / 8)
    n_obs_person = obs.sum(1)
    score = np.where(obs, y, 0).sum(1) / np.maximum(n_obs_person, 1)
    sd = score.std()
    theta = (score - score.mean()) / (sd if sd > 0 else 1.0)
    theta = np.where(n_obs_person > 0, theta, 0.0)
    return {
        "ability": theta.astype(np.float32),
        "discrimination": np.ones(y.shape[1], np.float32),
        "difficulty": d.astype(np.float32),
    }


def check_binary_responses(y, item_names=None, *, where: str = "responses", warn=None) -> np.ndarray:
    """Validate a binary response matrix; return it as int8.

    Stops (``ValueError``, one line) on a matrix that is not 2-D or on codes other than
    0, 1 and -1 (missing), naming the first offending item and person. Warns (through
    ``warn``, default :func:`warnings.warn`), naming them, about items everyone answered the
    same way (their parameters are then identified only through the prior, which is proper)
    and items with no observed response; persons with no observed response are counted in a
    warning: they are kept, and their ability draws come from the prior.

    Parameters
    ----------
    y : array-like (N, J)
        Response codes.
    item_names : sequence of str, optional
        Item names for the messages (None: "item j").
    where : str
        Prefix of the messages, naming the data checked.
    warn : callable, optional
        Receives each warning's message (None: :func:`warnings.warn`).

    Returns
    -------
    np.ndarray
        The responses, shape (N, J), as int8.

    Raises
    ------
    ValueError
        If ``y`` is not 2-D or holds a code other than 0, 1 and -1.
    """
    import warnings

    warn = warn or (lambda msg: warnings.warn(msg, stacklevel=3))
    y = np.asarray(y)
    if y.ndim != 2:
        raise ValueError(f"{where}: expected a persons x items matrix, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ValueError(f"{where}: binary responses must be integer codes 0, 1 or -1 (missing)")
    names = list(item_names) if item_names is not None else [f"item {j}" for j in range(y.shape[1])]
    bad = ~np.isin(y, (-1, 0, 1))
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        raise ValueError(
            f"{where}: code {y[i, j].item()!r} at person {i}, item '{names[j]}' is not binary; "
            f"expected 0, 1 or -1 (missing) ({int(bad.sum())} such cells)"
        )
    y = y.astype(np.int8)
    obs = y >= 0
    n_obs = obs.sum(0)
    n_ones = (y == 1).sum(0)
    empty = np.flatnonzero(n_obs == 0)
    if empty.size:
        warn(
            f"{where}: item(s) {[names[j] for j in empty]} have no observed response; "
            f"their parameters are drawn from the prior"
        )
    constant = np.flatnonzero((n_obs > 0) & ((n_ones == 0) | (n_ones == n_obs)))
    for j in constant:
        warn(
            f"{where}: item '{names[j]}' was answered {int(y[obs[:, j], j][0])} by every one of its "
            f"{int(n_obs[j])} respondents; its parameters rest on the prior"
        )
    no_resp = np.flatnonzero(obs.sum(1) == 0)
    if no_resp.size:
        warn(
            f"{where}: {no_resp.size} person(s) with no observed response (first: person {int(no_resp[0])}) "
            f"are kept; their abilities are drawn from the prior"
        )
    return y
