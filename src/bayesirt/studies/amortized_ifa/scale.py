"""A fit's latent scale beside its loadings (amortized_ifa's diagnostics and doubling check):
with a latent whose fitted spread differs from the true one, the loadings grow or shrink by the
ratio of the sds, and the loading MSE on a common scale (each loading times its factor's latent
sd, fitted and true) leaves that drift of scale out."""

from __future__ import annotations

import numpy as np
import pandas as pd


def scale_rows(estimates: pd.DataFrame) -> list[dict]:
    """One row per factor of one fit's estimates (loadings and the training persons' abilities,
    with their truth): the fitted and true latent variances, the loadings' slope on the true
    ones, and the loading MSE as the run scores it (free loadings) and on a common scale."""
    ability = estimates[(estimates.parameter == "ability") & estimates["true"].notna()]
    loading = estimates[(estimates.parameter == "loading") & estimates["true"].notna()]
    loading = loading[(loading["mean"] != 0) | (loading["true"] != 0)]  # a confirmatory model's fixed zeros
    rows = []
    for factor, a in ability.groupby("factor"):
        fitted = float(a["mean"].var(ddof=0) + (a["sd"] ** 2).mean())
        true = float(a["true"].var(ddof=0))
        lam = loading[loading.factor == factor]
        est, tru = lam["mean"].to_numpy(float), lam["true"].to_numpy(float)
        rows.append(
            {
                "factor": int(factor),
                "latent_variance": fitted,
                "true_variance": true,
                "loading_slope": float(est @ tru / (tru @ tru)) if len(tru) else np.nan,
                "loading_mse": float(np.mean((est - tru) ** 2)) if len(tru) else np.nan,
                "loading_mse_common_scale": (
                    float(np.mean((est * np.sqrt(fitted) - tru * np.sqrt(true)) ** 2)) if len(tru) else np.nan
                ),
            }
        )
    return rows
