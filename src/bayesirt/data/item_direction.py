"""Items keyed the wrong way: corrected item-rest correlations, before a fit.

An item scored in the opposite direction to the rest of its scale (reverse-keyed by the
questionnaire but not declared ``reverse_keyed``, or declared so by mistake) correlates
negatively with the other items of its scale. The models keep discriminations positive, so
such an item is fitted with a discrimination near zero and no word; this check says it first.

``item_rest_correlations`` is pure: for each item, Pearson's correlation between the item and
the rest score of its scale (the mean of the person's other observed items of that scale;
the item itself excluded, hence "corrected"), over the persons who answered the item and at
least one other item of the scale (pairwise complete; missing cells, -1, are ignored).
Reverse-keyed items count as the user declared them: already reversed (a matrix whose
``attrs["reoriented"]`` is false is reversed here for the computation).
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from bayesirt.io import MISSING, ResponseMatrix

# An item whose corrected item-rest correlation is below this is flagged. Correctly keyed items
# of a working scale correlate 0.2-0.7 with the rest of it; a value near zero or below means
# the item measures nothing the scale measures, or the opposite of it (a misread key).
MIN_ITEM_REST_CORRELATION = 0.05
MIN_PERSONS = 3  # fewer persons with the item and a rest score: no correlation (NaN, not flagged)

log = logging.getLogger(__name__)


def item_rest_correlations(rm: ResponseMatrix, threshold: float = MIN_ITEM_REST_CORRELATION) -> pd.DataFrame:
    """Corrected item-rest correlations, one row per item.

    Columns: item, scale, reverse_keyed, correlation, n_persons, flagged (the correlation is
    below ``threshold``; NaN where the scale has no other item or too few persons answered,
    never flagged).

    Parameters
    ----------
    rm : ResponseMatrix
        The responses.
    threshold : float
        Correlations below it are flagged.

    Returns
    -------
    pandas.DataFrame
        One row per item.
    """
    y = rm.responses.astype(float)
    observed = rm.responses != MISSING
    k = rm.n_categories.astype(float)
    reverse = np.array([it.reverse_keyed for it in rm.items])
    if reverse.any() and not rm.attrs.get("reoriented", True):
        y[:, reverse] = k[reverse] - 1 - y[:, reverse]
    y[~observed] = 0.0
    rows = []
    for scale in rm.scales:
        members = np.flatnonzero([it.scale == scale for it in rm.items])
        total, count = y[:, members].sum(1), observed[:, members].sum(1)
        for j in members:
            rest_n = count - observed[:, j]
            both = observed[:, j] & (rest_n > 0)
            r = np.nan
            if both.sum() >= MIN_PERSONS:
                rest = (total - y[:, j])[both] / rest_n[both]
                item = y[both, j]
                if item.std() > 0 and rest.std() > 0:
                    r = float(np.corrcoef(item, rest)[0, 1])
            rows.append(
                (rm.items[j].name, scale, bool(reverse[j]), r, int(both.sum()), bool(np.isfinite(r) and r < threshold))
            )
    return pd.DataFrame(rows, columns=["item", "scale", "reverse_keyed", "correlation", "n_persons", "flagged"])


def warn_item_direction(table: pd.DataFrame, key: str = "datasets.<name>") -> list[str]:
    """Log one WARNING per flagged item of an ``item_rest_correlations`` table.

    Each names the item and suggests ``reverse_keyed`` in the data set's config (``key``).

    Parameters
    ----------
    table : pandas.DataFrame
        An ``item_rest_correlations`` table.
    key : str
        The data set's config key, in the messages.

    Returns
    -------
    list of str
        The messages.
    """
    messages = []
    for row in table[table.flagged].itertuples():
        declared = "declared reverse-keyed" if row.reverse_keyed else "not declared reverse-keyed"
        fix = (
            f"remove it from '{key}.reverse_keyed' if that was a mistake"
            if row.reverse_keyed
            else f"if it is worded the other way, add it to '{key}.reverse_keyed'"
        )
        messages.append(
            f"item '{row.item}' (scale '{row.scale}', {declared}): corrected item-rest correlation "
            f"{row.correlation:.3f} over {row.n_persons} persons, below {MIN_ITEM_REST_CORRELATION}; "
            f"it may be keyed the wrong way: {fix}, or drop it from the items"
        )
        log.warning(messages[-1])
    return messages
