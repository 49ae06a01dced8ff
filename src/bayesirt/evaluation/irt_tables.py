"""Item and person tables in the forms psychometricians read (as mirt or lavaan print them).

Every graded response model here can be written in slope-intercept form,

    logit P(Y_ij >= k | theta_i) = sum_p a_jp theta_ip + d_jk,      k = 1..K_j-1,

(categories 0..K_j-1; for binary items K = 2 and the link is the logistic, or the normal ogive
Phi for the 2PNO). ``item_table`` reports that form and the conventional IRT form:

* an item that loads on one factor (every item of the factorized GRM, every item of a
  simple-structure confirmatory model): discrimination a and thresholds b_k = -d_k / a, so that
  P(Y >= k) = sigmoid(a (theta - b_k)) and b_k is the ability at which P(Y >= k) = 1/2;
* an item that loads on several factors (exploratory and complex-structure fits): Reckase's
  multidimensional discrimination MDISC = sqrt(sum_p a_p^2) and multidimensional difficulties
  MDIFF_k = -d_k / MDISC (the signed distance from the origin, along the item's direction of
  steepest slope, to the point where P(Y >= k) = 1/2). As in mirt, MDISC ignores factor
  correlations.

Given posterior draws, each IRT-form value is computed per draw and then summarised, so its
mean is the posterior mean of b (not -mean(d) / mean(a)) and its sd the posterior sd. Given
point estimates (one "draw"), ``sd`` is empty.

``person_table`` lists each person's score per factor: the posterior mean (EAP under the
fitted approximation) and posterior sd, or the encoder's mean and sd for amortized methods.
Only numpy and pandas: arrays and tables in, tables out.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

# The models keep discriminations positive (softplus or exp of a free parameter, half-normal
# or truncated-normal priors), so an item whose responses relate negatively to its factor (an
# item keyed the wrong way) is not fitted with a negative slope but pressed against the bound
# 0. A discrimination (one-factor a, or MDISC) below this sits at the bound: on the logit scale
# 0.1 moves P(Y >= k) by at most 2.5 points per standard deviation of ability, i.e. the item
# says next to nothing about its factor.
AT_BOUND_DISCRIMINATION = 0.1

log = logging.getLogger(__name__)

ITEM_COLUMNS = ["item", "item_name", "scale", "form", "parameter", "factor", "category", "mean", "sd"]
PERSON_COLUMNS = ["person", "person_id", "factor", "score", "sd", "n_answered", "score_type"]


def thresholds_to_slope_intercept(discrimination, thresholds):
    """IRT form -> slope-intercept: d_k = -a b_k.

    Parameters
    ----------
    discrimination : array (..., I)
        a.
    thresholds : array (..., I, K-1)
        b_k.

    Returns
    -------
    numpy.ndarray
        Intercepts d, shape (..., I, K-1).
    """
    a = np.asarray(discrimination)
    return -a[..., None] * np.asarray(thresholds)


def item_table(
    slopes,
    intercepts,
    n_categories: Sequence[int],
    item_names: Sequence[str],
    scales: Sequence[str],
    factor_names: Sequence[str],
    slope_sd=None,
    intercept_sd=None,
) -> pd.DataFrame:
    """Both forms of every item, one row per value (columns ``ITEM_COLUMNS``).

    Rows: form "slope_intercept" (parameter a per loaded factor, d per k) then form "irt" (a and
    b per k for one-factor items; mdisc and mdiff per k otherwise). ``factor`` names the factor
    of a slope ("" otherwise), ``category`` is k (-1 for a slope or mdisc).

    Parameters
    ----------
    slopes : array (S, I, P)
        Draws of a (S = 1 for point estimates); a slope that is exactly 0 in every draw is a
        fixed zero (not a loading of the item) and is not listed.
    intercepts : array (S, I, Kmax-1)
        Draws of d; entries k >= K_j - 1 of an item are ignored.
    n_categories : sequence of int
        K_j per item.
    item_names : sequence of str
        Item names.
    scales : sequence of str
        Each item's scale.
    factor_names : sequence of str
        Factor names (P).
    slope_sd, intercept_sd : array (I, P) and (I, Kmax-1), optional
        Posterior sds of a method that reports sds but no draws (S = 1); they fill the
        slope-intercept rows' ``sd``. The IRT form is then a plug-in of the means and its ``sd``
        stays empty.

    Returns
    -------
    pandas.DataFrame
        The item table.

    Raises
    ------
    ValueError
        If slopes and intercepts do not share S and I, or the factor names do not match P.
    """
    a = np.asarray(slopes, np.float64)
    d = np.asarray(intercepts, np.float64)
    if a.ndim != 3 or d.ndim != 3 or a.shape[:2] != d.shape[:2]:
        raise ValueError(f"slopes (S, I, P) and intercepts (S, I, K-1) must share S and I, got {a.shape} and {d.shape}")
    n_draws, n_items, n_factors = a.shape
    if len(factor_names) != n_factors:
        raise ValueError(f"{len(factor_names)} factor names for {n_factors} factors")
    rows = []

    def add(j, form, parameter, factor, k, values, sd=np.nan):
        values = np.asarray(values)
        sd = float(values.std(ddof=1)) if n_draws > 1 else float(sd)
        rows.append((j, item_names[j], scales[j], form, parameter, factor, k, float(values.mean()), sd))

    a_sd = np.full(a.shape[1:], np.nan) if slope_sd is None else np.asarray(slope_sd, np.float64)
    d_sd = np.full(d.shape[1:], np.nan) if intercept_sd is None else np.asarray(intercept_sd, np.float64)
    for j in range(n_items):
        n_k = int(n_categories[j]) - 1
        loaded = np.flatnonzero((a[:, j, :] != 0).any(0))
        for p in loaded:
            add(j, "slope_intercept", "a", factor_names[p], -1, a[:, j, p], a_sd[j, p])
        for k in range(n_k):
            add(j, "slope_intercept", "d", "", k + 1, d[:, j, k], d_sd[j, k])
        if loaded.size == 1:
            p = loaded[0]
            add(j, "irt", "a", factor_names[p], -1, a[:, j, p])
            for k in range(n_k):
                add(j, "irt", "b", factor_names[p], k + 1, -d[:, j, k] / a[:, j, p])
        elif loaded.size > 1:
            mdisc = np.sqrt((a[:, j, :] ** 2).sum(-1))
            add(j, "irt", "mdisc", "", -1, mdisc)
            for k in range(n_k):
                add(j, "irt", "mdiff", "", k + 1, -d[:, j, k] / mdisc)
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def person_table(
    mean, sd, factor_names: Sequence[str], person_ids: Sequence, answered, score_type: str
) -> pd.DataFrame:
    """One row per person and factor (columns ``PERSON_COLUMNS``), person by person.

    Parameters
    ----------
    mean, sd : array (N, P)
        Posterior means and sds of the abilities (or the encoder's).
    factor_names : sequence of str
        Factor names (P).
    person_ids : sequence
        Person identifiers (N).
    answered : array (N, P)
        Number of items of the factor the person answered.
    score_type : str
        What the scores are (written to every row).

    Returns
    -------
    pandas.DataFrame
        The person table.

    Raises
    ------
    ValueError
        If the shapes and names do not agree.
    """
    mean, sd, answered = (np.asarray(x) for x in (mean, sd, answered))
    n, p = mean.shape
    if sd.shape != (n, p) or answered.shape != (n, p) or len(person_ids) != n or len(factor_names) != p:
        raise ValueError(
            f"person table: means {mean.shape}, sds {sd.shape}, answered {answered.shape}, "
            f"{len(person_ids)} ids, {len(factor_names)} factors do not agree"
        )
    return pd.DataFrame(
        {
            "person": np.repeat(np.arange(n), p),
            "person_id": np.repeat(np.asarray(person_ids, dtype=object), p),
            "factor": np.tile(np.asarray(factor_names, dtype=object), n),
            "score": mean.ravel(),
            "sd": sd.ravel(),
            "n_answered": answered.ravel().astype(np.int64),
            "score_type": score_type,
        }
    )[PERSON_COLUMNS]


def answered_per_factor(observed, loads) -> np.ndarray:
    """(N, P): how many items loading on each factor a person answered.

    Parameters
    ----------
    observed : array (N, I)
        Boolean, observed responses.
    loads : array (I, P)
        Boolean, which factors each item loads on.

    Returns
    -------
    numpy.ndarray
        Counts, shape (N, P).
    """
    return np.asarray(observed, np.int64) @ np.asarray(loads, np.int64)


def items_at_lower_bound(items: pd.DataFrame, bound: float = AT_BOUND_DISCRIMINATION) -> pd.DataFrame:
    """One row per item of an ``item_table`` with its discrimination and whether it sits at the bound.

    Columns: item, item_name, scale, discrimination (a of a one-factor item, MDISC of an item on
    several factors), sd (posterior sd where known, else NaN) and at_bound
    (0 <= discrimination < ``bound``).

    Parameters
    ----------
    items : pandas.DataFrame
        An ``item_table``.
    bound : float
        The lower bound.

    Returns
    -------
    pandas.DataFrame
        One row per item.
    """
    one = items[(items.form == "slope_intercept") & (items.parameter == "a")]
    n_slopes = one.groupby("item").size()
    single = one[one["item"].map(n_slopes) == 1]
    multi = items[(items.form == "irt") & (items.parameter == "mdisc")]
    out = pd.concat([single, multi])[["item", "item_name", "scale", "mean", "sd"]].sort_values("item")
    out = out.rename(columns={"mean": "discrimination"}).reset_index(drop=True)
    out["at_bound"] = (out.discrimination >= 0) & (out.discrimination < bound)
    return out


def warn_items_at_bound(
    items: pd.DataFrame, where: str = "the fit", item_rest: pd.DataFrame | None = None
) -> list[str]:
    """Log one WARNING per item whose discrimination sits at the lower bound, or keyed the wrong way.

    Per item of an ``item_table`` at the lower bound (``items_at_lower_bound``), and, given the
    data's corrected item-rest correlations, per item flagged there whatever its discrimination:
    fitted jointly with the persons' abilities, an item keyed the wrong way in a short scale
    keeps a small positive one (0.19 against 1.4-2.1 in a simulated five-item scale of 1,000
    persons).

    Parameters
    ----------
    items : pandas.DataFrame
        An ``item_table``.
    where : str
        Names the fit in the messages.
    item_rest : pandas.DataFrame, optional
        Columns item, correlation, flagged, as ``data.item_direction`` computes them.

    Returns
    -------
    list of str
        The messages.
    """
    fitted = items_at_lower_bound(items)
    negative = {}
    if item_rest is not None:
        negative = dict(item_rest.loc[item_rest.flagged, ["item", "correlation"]].itertuples(index=False))
    messages = []
    for row in fitted.itertuples():
        if not (row.at_bound or row.item_name in negative):
            continue
        sd = f" (sd {row.sd:.3f})" if np.isfinite(row.sd) else ""
        head = f"{where}: item '{row.item_name}' (scale '{row.scale}'): discrimination {row.discrimination:.3f}{sd}"
        if row.at_bound:
            why = (
                f"sits at the lower bound 0 of the positivity constraint (below {AT_BOUND_DISCRIMINATION}); "
                f"a negative relation to its factor would look like this"
            )
        else:
            why = "is positive only because the model keeps it so"
        if row.item_name in negative:
            why += f"; its corrected item-rest correlation in the data is {negative[row.item_name]:.3f}"
        messages.append(
            f"{head} {why}: check whether it is keyed the wrong way (the data set's reverse_keyed) "
            f"or measures something else"
        )
        log.warning(messages[-1])
    return messages
