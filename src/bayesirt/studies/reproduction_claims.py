"""A reproduction page's rows: a claim, where it comes from, which method it judges, and one of
four verdicts (``bayesirt.studies.reproduction`` renders them).

* supported       the 95% interval lies wholly where the claim says;
* contradicted    the 95% interval excludes what the claim says;
* inconclusive    the interval reaches both sides (the row gives the replications a decisive
                  answer would need at the spread observed), or the fits behind it did not all
                  meet their stopping rule;
* not comparable  the run cannot judge the claim: fewer than two replications, a figure with
                  no spread between replications (one measurement), or another data set.

A claim is the seed's (with the section and a few of its words, verbatim) or this project's (a
hypothesis or a threshold of our own); the method it judges is the seed's as written (a name
ending in ``_seed``) or ours.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from bayesirt.evaluation.verdicts import Verdict, mean_interval, replications_needed

VERDICTS = ("supported", "contradicted", "inconclusive", "not comparable")
DECISIVE = ("supported", "contradicted")
PROJECT = "this project"


@dataclass(frozen=True)
class Claim:
    """One row of a page: a claim, what the run says of it, and where the claim comes from.

    Attributes
    ----------
    claim : str
        What is claimed.
    seed : str
        The seed's number or figure (or that it gives none).
    ours : str
        The run's number, with its interval over replications.
    verdict : str
        One of ``VERDICTS``.
    why : str
        The numbers behind the verdict, or why the two cannot be compared.
    method : str
        The method (or methods, comma-separated) the row judges, by the run's names.
    section : str
        The seed's section the claim is taken from; empty for this project's own claim.
    quote : str
        A few of the seed's words stating the claim, verbatim (a test checks them).
    fits_met : tuple of int, optional
        (fits that met their stopping rule, fits behind the claim), where not all did (``rests_on``).
    numbers_say : str
        The verdict the numbers alone give where ``rests_on`` held it at inconclusive; else empty.
    """

    claim: str
    seed: str
    ours: str
    verdict: str
    why: str
    method: str
    section: str = ""
    quote: str = ""
    fits_met: tuple[int, int] | None = None
    numbers_say: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        if not self.method.strip():
            raise ValueError("a claim names the method it judges")
        if bool(self.section) != bool(self.quote):
            raise ValueError("a seed's claim gives both its section and a quote; this project's gives neither")

    @property
    def source(self) -> str:
        """``"seed"`` or ``"this project"``."""
        return "seed" if self.quote else PROJECT

    @property
    def methods(self) -> list[str]:
        return [m.strip() for m in self.method.split(",") if m.strip()]

    @property
    def judges_seed_method(self) -> bool:
        """Whether every method the row judges is the seed's as written (``*_seed``)."""
        return all(m.endswith("_seed") for m in self.methods)


def seed_source(section: str, quote: str) -> dict:
    """The keyword arguments of a seed's claim: ``Claim(..., **seed_source(section, quote))``."""
    return {"section": section, "quote": quote}


def source_cell(c: Claim) -> str:
    return f'seed, {c.section}: "{c.quote}"' if c.source == "seed" else PROJECT


def method_cell(c: Claim) -> str:
    """Which methods the row judges, each marked the seed's (as written, ``*_seed``) or ours."""
    names = ", ".join(f"`{m}`" for m in c.methods)
    if c.judges_seed_method:
        return f"{names} (the seed's)"
    if not any(m.endswith("_seed") for m in c.methods):
        return f"{names} (ours, on the seed's claim)" if c.source == "seed" else f"{names} (ours)"
    whose = {True: "the seed's", False: "ours"}
    return ", ".join(f"`{m}` ({whose[m.endswith('_seed')]})" for m in c.methods)


# ---- numbers over replications ------------------------------------------------------------------


def decides(verdict: Verdict) -> bool:
    """Whether a replicated comparison has an interval of some width to judge by."""
    return verdict.n >= 2 and np.isfinite(verdict.low) and verdict.high > verdict.low


def from_verdict(verdict: Verdict) -> str:
    """A page's verdict from a replicated comparison's (``evaluation.verdicts``): its outcome,
    where it has an interval of some width; fewer than two pairs, or pairs that all differ by the
    same amount (no spread measured: one figure shared by every replication), are not comparable."""
    return verdict.outcome if decides(verdict) else "not comparable"


def needed_text(n: int | None, unit: str = "replications") -> str:
    if n is None:
        return "no number of replications would decide at the observed mean"
    return f"about {n} {unit} would decide at the spread observed"


def page_sentence(verdict: Verdict) -> str:
    """A replicated comparison's sentence (``evaluation.verdicts``) ending in the page's word for
    its verdict (``from_verdict``), so that a report's prose and its claims table name a verdict
    the same way; why a claim is inconclusive or not comparable follows in words."""
    evidence = verdict.text.rpartition(": **")[0] or verdict.text.rstrip(".")
    word = from_verdict(verdict)
    if word == "not comparable":
        why = " (too few pairs for an interval)" if verdict.n < 2 else " (no spread between replications)"
    elif word == "contradicted":
        why = " (the interval lies on the other side)"
    elif word == "inconclusive":
        why = f" (the interval reaches both sides at {verdict.n}; {needed_text(verdict.replications_needed)})"
    else:
        why = ""
    return f"{evidence}: **{word}**{why}."


def clean(text: str) -> str:
    """A verdict sentence without its Markdown emphasis (the page's table sets its own)."""
    return text.replace("**", "")


def tolerance_verdict(values, target: float, tolerance: float) -> tuple[str, str]:
    """A claim that the mean of ``values`` lies within ``tolerance`` of ``target``: supported
    where its 95% interval (``mean_interval``) lies wholly inside ``[target − tolerance, target +
    tolerance]``, contradicted where it lies wholly outside, inconclusive where it crosses a
    bound (with the replications that would decide: ``replications_needed`` towards the bound
    nearest the mean); not comparable with fewer than two values or an interval of zero width
    (values that all agree: no spread measured). Returns (verdict, sentence)."""
    mean, low, high, n = mean_interval(values)
    if n < 2 or not high > low:
        why = "fewer than two values" if n < 2 else "every value the same (no spread measured)"
        return "not comparable", f"{why}: no interval to judge by."
    lo, hi = target - tolerance, target + tolerance
    text = f"mean {mean:.3f}, 95% interval [{low:.3f}, {high:.3f}] over {n}, against {lo:.3f} to {hi:.3f}"
    if lo <= low and high <= hi:
        return "supported", f"{text}: inside."
    if high < lo or low > hi:
        return "contradicted", f"{text}: outside."
    x = np.asarray(values, dtype=np.float64)
    sd = float(x[np.isfinite(x)].std(ddof=1))
    bound = lo if abs(mean - lo) < abs(mean - hi) else hi
    return "inconclusive", f"{text}: across a bound; {needed_text(replications_needed(mean, sd, bound))}."


class Doubling(NamedTuple):
    """What doubling the fits' steps did to a claim's figure (``doubling``): whether the verdict may
    stand on it, the sentence the row adds, and the numbers behind both."""

    holds: bool
    sentence: str
    covered: int  # the values refitted (replications, or paired differences)
    moved: float
    half: float  # the half-width of the figure's 95% interval over the covered values
    what: str

    def of_some(self, values: int) -> Doubling:
        """The same check, where the claim rests on ``values`` values and it covered fewer: a check
        of some of a claim's fits keeps no verdict, and its sentence says how many it covered."""
        n = self.covered
        return self._replace(
            holds=False,
            sentence=(
                f"Doubling the steps of {n} of the {values} values it rests on (the diagnostics below; the others "
                f"not refitted) moves {self.what} over those {n} by {self.moved:.4f} (their interval's half-width "
                f"{self.half:.4f}); a check of some of the fits keeps no verdict."
            ),
        )


def doubling(diff, diff_doubled, what: str = "the mean difference") -> Doubling:
    """Whether doubling the fits' steps moves a claim's figure, the mean of ``diff`` (one value per
    replication: a paired difference, or the figure itself), by less than the half-width of its 95%
    interval (Student's t, as the verdicts'); ``diff_doubled`` the same values from the doubled
    fits. Whether the check covered every value the claim rests on is ``rests_on``'s to judge.
    The sentence is empty where there is no interval."""
    mean, low, high, n = mean_interval(diff)
    return _moved_by(mean, low, high, n, float(np.nanmean(np.asarray(diff_doubled, float))), what)


def verdict_doubling(first, doubled, what: str = "the mean difference") -> Doubling:
    """``doubling`` of a claim judged by a paired verdict (``evaluation.verdicts.Verdict``) twice:
    ``first`` on the fits at the run's steps, ``doubled`` on the same fits with the steps doubled."""
    return _moved_by(first.mean_difference, first.low, first.high, first.n, doubled.mean_difference, what)


def _moved_by(mean, low, high, n, mean_doubled, what) -> Doubling:
    if n < 2 or not np.isfinite(low) or high <= low:
        return Doubling(False, "", n, float("nan"), float("nan"), what)
    moved, half = abs(float(mean_doubled) - mean), (high - low) / 2
    holds = bool(moved < half)
    return Doubling(
        holds,
        f"Doubling every fit's steps (the diagnostics below) moves {what} by {moved:.4f}, "
        + (
            f"less than its interval's half-width {half:.4f}, so the verdict stands."
            if holds
            else f"not less than its interval's half-width {half:.4f}."
        ),
        n,
        moved,
        half,
        what,
    )


def doubling_check(
    doubled,
    method: str,
    figure: str,
    what: str = "the mean difference",
    where=None,
    baseline=None,
    on=("rep",),
) -> Doubling | None:
    """The doubling check (``doubling``) of a claim on ``method``'s ``figure``, from a study's
    doubled fits (its ``diagnostics.doubled_fits``: a row per refitted fit with ``method``,
    ``figure`` and ``<figure>_doubled``), or None where the diagnostics did not refit it.

    ``where`` selects rows (column -> value; a value of None selects every row); rows without
    the figure are left out. ``baseline`` makes the figure a paired difference: another method's
    fits on the same data sets (a method name; rows paired on the columns ``on``), or a value
    per replication (a Series by ``rep``, the same for the run's and the doubled fits)."""
    if doubled is None or doubled.empty:
        return None
    d = doubled
    for column, value in (where or {}).items():
        if value is not None:
            d = d[d[column] == value]
    mine = d[(d.method == method) & d[figure].notna()]
    if mine.empty:
        return None
    if isinstance(baseline, str):
        both = mine.merge(d[d.method == baseline], on=list(on), suffixes=("", "_base"))
        if both.empty:
            return None
        return doubling(
            (both[figure] - both[f"{figure}_base"]).to_numpy(),
            (both[f"{figure}_doubled"] - both[f"{figure}_doubled_base"]).to_numpy(),
            what,
        )
    base = 0.0 if baseline is None else baseline.reindex(mine.rep).to_numpy()
    return doubling(mine[figure].to_numpy() - base, mine[f"{figure}_doubled"].to_numpy() - base, what)


def values_behind(fits) -> int:
    """How many values a claim on ``fits`` rests on: the most fits of one of its methods (or
    conditions), one per replication, as a paired or a one-method claim takes them."""
    for column in ("method", "condition"):
        if column in fits:
            return int(fits.groupby(column).size().max()) if len(fits) else 0
    return len(fits)


def rests_on(
    claim: Claim, fits, rule: str = "stopping rule", doubling: Doubling | None = None, values: int | None = None
) -> Claim:
    """A claim whose ``fits`` (a table with a ``converged`` column: whether each met its stopping
    rule) did not all meet it decides nothing: a supported or contradicted verdict becomes
    inconclusive, and the row says how many fits met it; unless ``doubling`` (the doubling check
    of the claim's figure) holds and covered every value the claim rests on (``values``, by
    default ``values_behind(fits)``), when the verdict stands with its sentence. Fits whose
    table has no such column leave the claim as it is (nothing to say either way)."""
    if "converged" not in fits:
        return claim
    flags = np.asarray(fits["converged"], dtype=bool)
    met, total = int(flags.sum()), int(flags.size)
    if total == 0 or met == total:
        return claim
    values = values_behind(fits) if values is None else values
    if doubling is not None and doubling.sentence and doubling.covered < values:
        doubling = doubling.of_some(values)
    if doubling is not None and doubling.holds:
        return replace(
            claim, why=f"{claim.why.rstrip()} Rests on {met} of {total} fits that met their {rule}. {doubling.sentence}"
        )
    capped = claim.verdict in DECISIVE
    why = f"{claim.why.rstrip()} Rests on {met} of {total} fits that met their {rule}"
    if doubling is not None and doubling.sentence:  # a doubling check that did not hold
        why += f". {doubling.sentence.rstrip('.')}" + ("; so" if capped else ".")
    else:
        why += ", so" if capped else "."
    if capped:
        why += f" the verdict is at most inconclusive (the numbers alone say {claim.verdict})."
    return replace(
        claim,
        verdict="inconclusive" if capped else claim.verdict,
        why=why,
        fits_met=(met, total),
        numbers_say=claim.verdict if capped else "",
    )


def block_time(seconds, fits: int) -> str:
    """A fit time that is a block's, shared by its fits: one measurement, no interval."""
    return f"{float(seconds):.1f} s per fit (one block, shared by {fits} fits)"
