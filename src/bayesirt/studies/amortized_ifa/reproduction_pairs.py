"""The run's fits as amortized_ifa's reproduction page reads them: which latent distribution each
simulation design draws, the item parameters it scores, and IWAE against IWAVB paired by
replication, judged as a claim. Read by the page's claims (``reproduction``), its figures
(``reproduction_figures``) and its diagnostics (``diagnostics``), so it sits apart from them."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from bayesirt.evaluation import verdicts
from bayesirt.studies.reproduction import Claim, clean, describe, from_verdict, page_sentence
from bayesirt.studies.reproduction_claims import doubling_check

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
