"""The run's fits as amortized_ifa's reproduction page reads them: which latent distribution each
simulation design draws, the item parameters it scores, and IWAE against IWAVB paired by
replication, judged as a claim. Read by the page's claims (``reproduction``), its figures
(``reproduction_figures``) and its diagnostics (``diagnostics``), so it sits apart from them."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from bayesirt.evaluation import verdicts
from bayesirt.studies.reproduction import Claim, clean, describe, from_verdict, page_sentence, rests_on
from bayesirt.studies.reproduction_claims import doubling_check, verdict_doubling

# the simulation designs by latent distribution (*_seed_scale: the mixture as the seed draws it)
LATENT = {
    "normal_p5": "normal",
    "mixture_p1": "mixture",
    "mixture_p3": "mixture",
    "mixture_p1_seed_scale": "mixture",
    "mixture_p3_seed_scale": "mixture",
}
# the pairs of methods a claim compares: the seed's as written first, then this project's
PAIRS = (("iwae_seed", "iwavb_seed"), ("iwae", "iwavb"))
BOTH = "iwae, iwavb"  # the method cell of a claim on the pair (``named`` gives the run's names)
PARAMETERS = {"loading": "loading", "intercept": "intercept", "factor_corr": "factor correlation"}


def per_replication(fits: pd.DataFrame, column: str) -> pd.DataFrame:
    """IWAE and IWAVB side by side, one row per design and replication (the fits at several R of
    one replication share its data, so they are averaged into it); a replication missing only
    another method's fit (a seed-as-written one) keeps its row."""
    wide = fits.pivot_table(index=["design", "rep"], columns="method", values=column, aggfunc="mean")
    return wide.dropna(subset=[m for m in ("iwae", "iwavb") if m in wide.columns] or None)


def as_pair(fits: pd.DataFrame, pair: tuple[str, str]) -> pd.DataFrame:
    """The fits of one pair of ``PAIRS``, their methods named ``iwae`` and ``iwavb`` as the claims
    read them."""
    f = fits[fits.method.isin(pair)]
    return f.assign(method=f.method.map(dict(zip(pair, ("iwae", "iwavb"), strict=True))))


def paired_claim(
    claim, seed, pairs: pd.DataFrame, column: str, direction: str, margin: float = 0.0, source: dict | None = None
) -> Claim:
    source = source or {}
    if pairs.empty or not {"iwavb", "iwae"} <= set(pairs.columns):
        return Claim(
            claim, seed, "not run", "not comparable", "the run has no paired IWAE and IWAVB fits here.", BOTH, **source
        )
    v = verdicts.paired_verdict(
        pairs.iwavb - pairs.iwae, direction=direction, margin=margin, subject=f"IWAVB's {column} minus IWAE's"
    )
    return Claim(
        claim,
        seed,
        f"IWAVB {describe(pairs.iwavb, 4)}; IWAE {describe(pairs.iwae, 4)}",
        from_verdict(v),
        clean(page_sentence(v)),
        BOTH,
        **source,
    )


def named(claim: Claim, pair: tuple[str, str]) -> Claim:
    """A claim judged on ``as_pair``'s fits, its methods named as the run names them."""
    names = dict(zip(("iwae", "iwavb"), pair, strict=True))
    return replace(claim, method=", ".join(names.get(m.strip(), m.strip()) for m in claim.method.split(",")))


def pair_doubling(doubled: pd.DataFrame | None, column: str):
    """The doubling check of IWAVB's ``column`` minus IWAE's, paired by design and replication,
    on doubled fits already named by ``as_pair`` (None where they were not refitted)."""
    return doubling_check(doubled, "iwavb", column, baseline="iwae", on=("design", "rep"))


GAIN = "loglik_independent"  # the gain row's figure: this project's method-independent estimate


def gains_of(fits: pd.DataFrame, doubled: pd.DataFrame | None) -> tuple[pd.Series, pd.Series] | None:
    """IWAVB's held-out log-likelihood gain over IWAE per design and replication, at the run's
    steps and with them doubled: the doubling check's refits where it has them, the run's own
    where both fits of the replication met their stopping rule (a larger cap stops them at the
    same step), missing where neither. None where the run lacks the pair."""
    run = per_replication(fits, GAIN)
    if not {"iwae", "iwavb"} <= set(run.columns):
        return None
    gain = run.iwavb - run.iwae
    pair = fits[fits.method.isin(("iwae", "iwavb"))]
    met = pair.groupby(["design", "rep"]).converged.all().reindex(gain.index, fill_value=False)
    twice = gain.where(met.astype(bool))
    if doubled is not None and not doubled.empty:
        d = doubled.pivot_table(index=["design", "rep"], columns="method", values=f"{GAIN}_doubled", aggfunc="mean")
        if {"iwae", "iwavb"} <= set(d.columns):
            twice = twice.fillna((d.iwavb - d.iwae).reindex(gain.index))
    return gain, twice


def gain_claim(gains: dict, twice: dict, fits: pd.DataFrame) -> Claim:
    """The row "IWAVB's gain over IWAE is larger with multimodal latents" (this project's reading
    of Figures 9 and 12): the mixture designs' gains against the normal's, two groups of
    replications; its doubling check compares the same groups with every fit's steps doubled
    (``gains_of``), over the replications the check covers."""

    def verdict(mixture, normal):
        return verdicts.two_group_verdict(
            mixture,
            normal,
            direction="higher",
            labels=("mixture", "normal latents"),
            subject="IWAVB's held-out log-likelihood gain over IWAE per replication",
        )

    v = verdict(gains["mixture"], gains["normal"])
    claim = Claim(
        "IWAVB's gain over IWAE is larger with multimodal latents",
        "Figures 9 and 12: no number",
        f"gain per person: mixture {describe(gains['mixture'], 4)}; normal {describe(gains['normal'], 4)}",
        from_verdict(v),
        clean(page_sentence(v)),
        BOTH,
    )
    covered = {k: twice[k].notna() for k in gains}
    check = None
    if all(c.sum() >= 2 for c in covered.values()):
        first = verdict(gains["mixture"][covered["mixture"]], gains["normal"][covered["normal"]])
        second = verdict(twice["mixture"].dropna(), twice["normal"].dropna())
        check = verdict_doubling(first, second, "the difference of mean gains")
    return rests_on(claim, fits, doubling=check, values=v.n)
