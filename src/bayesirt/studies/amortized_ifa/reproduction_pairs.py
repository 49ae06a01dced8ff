"""The run's fits as amortized_ifa's reproduction page reads them: which latent distribution each
simulation design draws, the item parameters it scores, and IWAE against IWAVB paired by
replication. Read by both the page's claims (``reproduction``) and its figures
(``reproduction_figures``), so it sits apart from either."""

from __future__ import annotations

import pandas as pd

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
