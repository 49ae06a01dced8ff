"""Tidy long tables of model parameters (estimates or true values), and the truth merge.

One builder, ``long_table``, turns named parameter arrays into rows: one row per element,
with an integer column per index (``item``, ``person``, ``scale``, ``category``, ``factor``,
...) that is -1 where a parameter has no such index, and a value column. The layouts of the
models (``factorized_grm_table``, ``mixture_grm_table``, ``mgrm_table``) only say which axes
each parameter has; ``attach_truth`` lines estimates up with the true values of simulated data.
Only numpy and pandas: every layer may use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd


def long_table(
    params: Mapping,
    axes: Mapping[str, Sequence[str]],
    columns: Sequence[str],
    value_column: str = "value",
    *,
    start: Mapping[str, int] | None = None,
    inherit: Mapping[str, tuple[str, Sequence[int]]] | None = None,
    labels: Mapping[str, tuple[str, Sequence[str]]] | None = None,
) -> pd.DataFrame:
    """One row per element of each array in ``params`` whose name is in ``axes``.

    axes     parameter name -> names of its array's axes, in the order of the rows (parameters
             in the order of ``axes``, elements in row-major order). Names not in ``params``
             are skipped. A masked array (``np.ma``) leaves out its masked elements: ragged
             rows, or one triangle of a symmetric matrix.
    columns  the index columns, in order; an index a parameter lacks is -1.
    start    first value of an index (default 0), e.g. ``{"category": 1}`` for thresholds.
    inherit  ``{column: (source, lookup)}``: where ``column`` is -1 and ``source`` is not, it
             becomes ``lookup[source]`` (an item's scale).
    labels   ``{name: (column, names)}``: a column of ``names[index]`` ("" where the index is
             -1) right after ``column``; replaces it when ``name == column``.
    """
    start = dict(start or {})
    parts = []
    for name, dims in axes.items():
        if name not in params:
            continue
        values = np.ma.asarray(params[name])
        if values.ndim != len(dims):
            raise ValueError(f"parameter '{name}' has {values.ndim} axes, expected {len(dims)} ({list(dims)})")
        keep = ~np.ma.getmaskarray(values).ravel()
        if not keep.any():
            continue
        index = {d: i.ravel()[keep] + start.get(d, 0) for d, i in zip(dims, np.indices(values.shape))}
        n = int(keep.sum())
        block = {"parameter": name}
        block.update({c: index[c] if c in index else np.full(n, -1) for c in columns})
        block[value_column] = np.ma.getdata(values).ravel()[keep]
        parts.append(pd.DataFrame(block))
    out = pd.concat(parts, ignore_index=True)
    for column, (source, lookup) in (inherit or {}).items():
        take = (out[column].to_numpy() < 0) & (out[source].to_numpy() >= 0)
        out.loc[take, column] = np.asarray(lookup)[out.loc[take, source].to_numpy()]
    for name, (column, names) in (labels or {}).items():
        table = np.asarray(list(names) + [""], dtype=object)  # index -1 -> ""
        text = table[out[column].to_numpy()]
        if name == column:
            out[column] = text
        else:
            out.insert(out.columns.get_loc(column) + 1, name, text)
    return out


def attach_truth(
    estimates: pd.DataFrame, truth: pd.DataFrame, keys: Sequence[str], value: str = "value", name: str = "true"
) -> pd.DataFrame:
    """``estimates`` with the true value of each row as column ``name`` (NaN where the truth
    has no such row); ``keys`` are the index columns the two tables share."""
    merged = estimates.merge(truth[list(keys) + [value]].rename(columns={value: name}), on=list(keys), how="left")
    if len(merged) != len(estimates):
        raise ValueError(f"truth table does not match the estimates one-to-one on {list(keys)}")
    return merged


# ----------------------------------------------------------------------------- model layouts

FACTORIZED_GRM_AXES = {
    "discrimination": ("item",),
    "base_difficulty": ("item",),
    "increments": ("item", "category"),
    "ability": ("person", "scale"),
}


def factorized_grm_table(params: Mapping, scale_index, scale_names, value_column: str = "value") -> pd.DataFrame:
    """Factorized GRM (seed 000): parameter, item, person, scale (name), category (k of an
    increment, from 1), value."""
    return long_table(
        params,
        FACTORIZED_GRM_AXES,
        ["item", "person", "scale", "category"],
        value_column,
        start={"category": 1},
        inherit={"scale": ("item", scale_index)},
        labels={"scale": ("scale", scale_names)},
    )


def mixture_grm_table(params: Mapping, scale_index, scale_names, value_column: str = "value") -> pd.DataFrame:
    """The factorized layout with a last column ``dimension``: 0..D-1 for discriminations
    and abilities, -1 for the shared thresholds; rows dimension by dimension."""
    by_dimension = {
        "discrimination": np.moveaxis(np.asarray(params["discrimination"]), -1, 0),
        "base_difficulty": params["base_difficulty"],
        "increments": params["increments"],
        "ability": np.moveaxis(np.asarray(params["ability"]), -1, 0),
    }
    axes = {
        "discrimination": ("dimension", "item"),
        "base_difficulty": ("item",),
        "increments": ("item", "category"),
        "ability": ("dimension", "person", "scale"),
    }
    out = long_table(
        by_dimension,
        axes,
        ["item", "person", "scale", "category", "dimension"],
        value_column,
        start={"category": 1},
        inherit={"scale": ("item", scale_index)},
        labels={"scale": ("scale", scale_names)},
    )
    out = out[[c for c in out.columns if c != "dimension"] + ["dimension"]]
    # abilities of one person and dimension by scale name, as this table has always listed them
    order = {name: k for k, name in enumerate(FACTORIZED_GRM_AXES)}
    out = out.sort_values(
        ["parameter", "dimension", "item", "person", "scale", "category"],
        key=lambda c: c.map(order) if c.name == "parameter" else c,
        kind="stable",
    )
    return out.reset_index(drop=True)


def mgrm_table(params: Mapping, item_names=None, factor_names=None, value_column: str = "value") -> pd.DataFrame:
    """Multidimensional GRM (seed 003): parameter (loading | intercept | factor_corr |
    ability), item, item_name, person, factor, factor_name, factor2 (the other factor of a
    correlation), category (k = 1..C-1 of an intercept), value. ``params["intercept"]`` may be
    a list of per-item arrays (items with different numbers of categories); only the lower
    triangle (factor > factor2) of the correlation matrix is listed."""
    lam = np.asarray(params["loading"])
    n_items, n_factors = lam.shape
    values = {"loading": lam}
    if "intercept" in params:
        rows = [np.asarray(a).ravel() for a in params["intercept"]]
        width = max(r.size for r in rows)
        padded = np.ma.masked_all((len(rows), width), np.result_type(*rows))
        for j, r in enumerate(rows):
            padded[j, : r.size] = r
        values["intercept"] = padded
    if "factor_corr" in params:
        corr = np.asarray(params["factor_corr"])
        values["factor_corr"] = np.ma.masked_array(corr, mask=~np.tri(n_factors, k=-1, dtype=bool))
    if "ability" in params:
        values["ability"] = params["ability"]
    axes = {
        "loading": ("item", "factor"),
        "intercept": ("item", "category"),
        "factor_corr": ("factor", "factor2"),
        "ability": ("person", "factor"),
    }
    item_names = list(item_names) if item_names is not None else [f"item{j + 1}" for j in range(n_items)]
    factor_names = list(factor_names or [f"F{p + 1}" for p in range(n_factors)])
    return long_table(
        values,
        axes,
        ["item", "person", "factor", "factor2", "category"],
        value_column,
        start={"category": 1},
        labels={"item_name": ("item", item_names), "factor_name": ("factor", factor_names)},
    )
