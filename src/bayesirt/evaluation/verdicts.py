"""Verdicts on a report's claims from replicated comparisons: supported, contradicted, or
inconclusive at the number of replications run, stated with the evidence.

A claim such as "method A gives a lower MSE than method B" is judged on the paired differences
A − B, one per replication (both methods fitted to the same data). The verdict follows a
confidence interval for the mean difference (Student t, from scipy):

* supported     the whole interval lies on the claimed side of the threshold;
* contradicted  the whole interval lies on the other side (or on the threshold itself);
* inconclusive  the interval straddles the threshold, or there are fewer than two pairs.

The threshold is 0 for a strict claim ("lower"); a ``margin`` > 0 turns it into "lower or
comparable": differences up to ``margin`` in the wrong direction still count as comparable.
The sentence reports what was found (how many pairs favour the claim, the mean difference and
its interval), never the rule, so that a reader can weigh it.

``two_group_verdict`` judges a claim about two unpaired groups (e.g. a gain that is larger
with one kind of data than another) by Welch's interval for the difference of their means.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

OUTCOMES = ("supported", "contradicted", "inconclusive")
DIRECTIONS = ("lower", "higher")


@dataclass(frozen=True)
class Verdict:
    """A verdict on a report's claim.

    Attributes
    ----------
    outcome : str
        One of ``OUTCOMES``: supported, contradicted, inconclusive.
    n : int
        Pairs (or observations) the verdict rests on.
    mean_difference : float
        Mean difference.
    low, high : float
        Interval for the mean difference (nan with fewer than two pairs).
    level : float
        Level of the interval.
    text : str
        The evidence and the outcome in one sentence.
    threshold : float
        The value the interval is judged against (0, or the margin on the wrong side).
    sd : float
        Spread of one replication's difference (for two groups, such that the standard error
        at ``m`` values per group is ``sd / sqrt(m)``); nan where it was not measured.
    """

    outcome: str  # one of OUTCOMES
    n: int  # pairs (or observations) the verdict rests on
    mean_difference: float
    low: float  # interval for the mean difference (nan with fewer than two pairs)
    high: float
    level: float
    text: str  # the evidence and the outcome in one sentence
    threshold: float = 0.0
    sd: float = np.nan

    @property
    def replications_needed(self) -> int | None:
        """Replications (pairs, or values per group) at which an interval at this verdict's mean
        and spread would exclude its threshold (``replications_needed``)."""
        return replications_needed(self.mean_difference, self.sd, self.threshold, self.level)


def replications_needed(mean: float, sd: float, threshold: float, level: float = 0.95) -> int | None:
    """How many replications a decisive answer would need, at the spread observed.

    A verdict is decisive once the ``level`` interval of the mean, ``mean ± t·sd/√n`` with
    Student's ``t`` at ``n − 1`` degrees of freedom, excludes the ``threshold``. Keeping the
    observed ``mean`` and ``sd``, the smallest such ``n`` solves
    ``n ≥ (t_{n−1} · sd / |mean − threshold|)²``. Since ``t`` depends on ``n``, the search starts
    from the normal approximation ``ceil((z · sd / distance)²)`` (a lower bound, as ``t > z``)
    and steps up until the inequality holds. An estimate, not a promise: further replications
    move the mean and the sd.

    Parameters
    ----------
    mean, sd : float
        The observed mean difference and the spread (sd) of one replication's difference.
    threshold : float
        The value the interval must exclude.
    level : float
        Level of the interval, in (0, 1).

    Returns
    -------
    int or None
        At least 2; None where no number of replications would decide (the mean on the
        threshold, or no finite positive spread).
    """
    distance = abs(mean - threshold)
    if not (np.isfinite(distance) and np.isfinite(sd)) or distance == 0 or sd <= 0:
        return None
    from scipy import stats  # here, not at the top: importing scipy.stats costs about a second in every job

    quantile = 0.5 + level / 2
    n = max(2, int(np.ceil((stats.norm.ppf(quantile) * sd / distance) ** 2)))
    while stats.t.ppf(quantile, n - 1) * sd / np.sqrt(n) >= distance:
        n += 1
    return n


def number(x: float) -> str:
    """Three significant digits with a true minus sign, as a report prints a difference.

    Parameters
    ----------
    x : float
        The number.

    Returns
    -------
    str
        E.g. ``"−0.0123"``; ``"n/a"`` if not finite.
    """
    if not np.isfinite(x):
        return "n/a"
    return f"{x:.3g}".replace("-", "−")


def _check(direction: str, margin: float, level: float) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction '{direction}' is not one of {DIRECTIONS}")
    if not np.isfinite(margin) or margin < 0:
        raise ValueError(f"margin {margin} must be finite and >= 0")
    if not 0 < level < 1:
        raise ValueError(f"level {level} is outside (0, 1)")


def _outcome(low: float, high: float, direction: str, margin: float) -> str:
    """Where the interval lies against the threshold (0, or the margin tolerated in the wrong direction)."""
    if direction == "lower":
        threshold = margin
        return "supported" if high < threshold else "contradicted" if low >= threshold else "inconclusive"
    threshold = -margin
    return "supported" if low > threshold else "contradicted" if high <= threshold else "inconclusive"


def mean_interval(values, level: float = 0.95) -> tuple[float, float, float, int]:
    """Mean of the finite ``values`` and Student's t interval for it: (mean, low, high, n).

    The interval is nan with fewer than two finite values, and the mean itself when all agree
    to rounding (no spread measured: scipy would divide by a zero standard error, or give an
    interval of rounding noise).
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return np.nan, np.nan, np.nan, 0
    mean = float(x.mean())
    if n < 2:
        return mean, np.nan, np.nan, n
    if np.ptp(x) <= 1e-12 * max(1.0, abs(mean)):
        return mean, mean, mean, n
    from scipy import stats  # imported on first use (see replications_needed)

    ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence_level=level)
    return mean, float(ci.low), float(ci.high), n


def paired_verdict(
    differences,
    *,
    subject: str,
    direction: str,
    margin: float = 0.0,
    level: float = 0.95,
    unit: str = "paired replications",
) -> Verdict:
    """Verdict on the claim that paired ``differences`` are ``direction`` than 0.

    Differences are claimed method − baseline, one per pair; ``margin`` in the wrong direction
    is tolerated. ``subject`` starts the sentence, e.g. "IWAVB's loading MSE"; pairs with a
    missing value (nan) are left out.

    Parameters
    ----------
    differences : array
        Claimed method − baseline, one per pair.
    subject : str
        Start of the sentence.
    direction : str
        ``"lower"`` or ``"higher"``.
    margin : float
        Tolerance in the wrong direction (>= 0).
    level : float
        Level of the interval, in (0, 1).
    unit : str
        What a pair is, in the sentence.

    Returns
    -------
    Verdict
        Outcome, interval and sentence.

    Raises
    ------
    ValueError
        If ``direction``, ``margin`` or ``level`` is invalid.
    """
    _check(direction, margin, level)
    d = np.asarray(differences, dtype=np.float64).ravel()
    d = d[np.isfinite(d)]
    n = int(d.size)
    if n == 0:
        return Verdict(
            "inconclusive",
            0,
            np.nan,
            np.nan,
            np.nan,
            level,
            f"{subject}: no paired replications to compare: inconclusive.",
        )
    favour = int(np.sum(d < 0) if direction == "lower" else np.sum(d > 0))
    ties = int(np.sum(d == 0))
    mean, low, high, _ = mean_interval(d, level)
    evidence = f"{subject} is {direction} in {favour} of {n} {unit}"
    if ties:
        evidence += f" ({ties} tied)"
    evidence += f"; mean difference {number(mean)}"
    if n < 2:
        outcome = "inconclusive"
        evidence += " (one pair gives no interval)"
    else:
        outcome = _outcome(low, high, direction, margin)
        evidence += f", {level:.0%} interval [{number(low)}, {number(high)}]"
    if margin > 0:
        evidence += f" (a difference within {number(margin)} counts as comparable)"
    tail = f"inconclusive at {n} replication{'s' if n != 1 else ''}" if outcome == "inconclusive" else outcome
    threshold = margin if direction == "lower" else -margin
    sd = float(d.std(ddof=1)) if n > 1 else np.nan
    return Verdict(outcome, n, mean, low, high, level, f"{evidence}: **{tail}**.", threshold, sd)


def two_group_verdict(
    first, second, *, subject: str, direction: str, labels=("first", "second"), level: float = 0.95
) -> Verdict:
    """Verdict on the claim that the mean of ``first`` is ``direction`` than the mean of ``second``.

    Two unpaired groups; Welch's interval for the difference of means.

    Parameters
    ----------
    first, second : array
        The two groups' values.
    subject : str
        Start of the sentence.
    direction : str
        ``"lower"`` or ``"higher"``.
    labels : tuple of str
        Names of the groups in the sentence.
    level : float
        Level of the interval, in (0, 1).

    Returns
    -------
    Verdict
        Outcome, interval and sentence.

    Raises
    ------
    ValueError
        If ``direction`` or ``level`` is invalid.
    """
    _check(direction, 0.0, level)
    a = np.asarray(first, dtype=np.float64).ravel()
    b = np.asarray(second, dtype=np.float64).ravel()
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    evidence = (
        f"{subject}: mean {number(a.mean()) if a.size else 'n/a'} with {labels[0]} ({a.size}) against "
        f"{number(b.mean()) if b.size else 'n/a'} with {labels[1]} ({b.size})"
    )
    if a.size < 2 or b.size < 2:
        return Verdict(
            "inconclusive",
            int(a.size + b.size),
            float(a.mean() - b.mean()) if a.size and b.size else np.nan,
            np.nan,
            np.nan,
            level,
            f"{evidence}; too few values for an interval: **inconclusive at "
            f"{min(a.size, b.size)} replication{'s' if min(a.size, b.size) != 1 else ''}**.",
        )
    mean = float(a.mean() - b.mean())
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        low = high = mean  # no spread in either group
    else:
        from scipy import stats  # imported on first use (see replications_needed)

        ci = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence_level=level)
        low, high = float(ci.low), float(ci.high)
    outcome = _outcome(low, high, direction, 0.0)
    n = int(min(a.size, b.size))
    tail = f"inconclusive at {n} replications" if outcome == "inconclusive" else outcome
    return Verdict(
        outcome,
        int(a.size + b.size),
        mean,
        low,
        high,
        level,
        f"{evidence}; difference {number(mean)}, {level:.0%} interval [{number(low)}, {number(high)}]: **{tail}**.",
        0.0,
        float(np.sqrt(a.var(ddof=1) + b.var(ddof=1))),
    )


def paired_differences(
    frame: pd.DataFrame, value: str, *, claimed: str, baseline: str, units, method_column: str = "method"
) -> pd.Series:
    """``claimed`` − ``baseline`` of ``value`` per unit.

    The unit is the columns ``units``, e.g. design and replication; each method's values are
    first averaged within the unit; units where either method has no value are left out. The
    unit is what is replicated independently: fits that share data (several numbers of
    importance samples on one simulated data set) are averaged into one pair, not counted as
    several.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per fit.
    value : str
        The column compared.
    claimed, baseline : str
        The two methods.
    units : sequence of str
        Columns that identify a unit.
    method_column : str
        Column naming the method.

    Returns
    -------
    pandas.Series
        Differences, indexed by unit (empty if either method is absent).
    """
    units = list(units)
    piv = frame.pivot_table(index=units, columns=method_column, values=value, aggfunc="mean")
    if claimed not in piv.columns or baseline not in piv.columns:
        return pd.Series(dtype=np.float64)
    return (piv[claimed] - piv[baseline]).dropna()
