"""The missing cells of a fit with an imputation objective (``inference.variational.objectives``): their
layout in a fit's data, the view a batch takes of them, and the random numbers that draw their
imputations.

Layout (``imputation_data``; the ``MissingCells`` pytree and the placement of cells in it are
``inference.variational.missing_cell_layout``). The missing cells live in ``MissingCells`` under
``data["shared"]``, which the training driver passes to every batch whole instead of slicing
it by persons; the person-indexed arrays ``miss_start`` and ``miss_count`` (first cell and
number of cells of each person in the flat list) are sliced with the persons. A batch of all
persons in order (the default full batch) evaluates the cells as one row per item, padded to the
largest per-item count (``block_*``; when that padding would exceed half the cells, the flat
list instead): per-item quantities then broadcast along a row instead of being gathered per
cell and scattered back in the backward pass, the slow part on CPU. A minibatch of B persons
gathers its persons' cells from the flat list (sorted by person) into a block of fixed size,
the most cells any B persons have (known when the data are built), and masks the unused tail.

Blocks of fits (``block_data``). The bulk driver (``inference.execution.bulk``) fits several data sets
as one program, so their arrays need one shape; different masks hide different cells. Each
fit's cells are then padded to the largest layout of the block (``padded``): padding slots are
masked out (``valid``, ``block_valid``), and every real cell keeps the random numbers it has in
its fit alone: the uniforms that draw its imputations are those ``jax.random.uniform`` gives
at the cell's position in the fit's own layout (``draw_at``, ``draw_size``, ``own_cap``;
``uniform_at``), so a fit in a block draws the same imputations as alone.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.random import threefry2x32_p

from bayesirt.inference.execution.training import SHARED
from bayesirt.inference.variational.missing_cell_layout import (  # noqa: F401  (BLOCK_WASTE: objectives takes the layout's names from here)
    BLOCK_WASTE,
    CELLS,
    Layout,
    MissingCells,
    _Cells,
    _data,
)

KEYS = ("miss_start", "miss_count", SHARED)  # what ``imputation_data`` adds to a fit's data


def imputation_data(
    responses: np.ndarray, persons: np.ndarray, items: np.ndarray, pmf: np.ndarray, n_categories: np.ndarray
) -> dict:
    """The imputation PMFs of the missing cells as a fit's ``extra_data`` (see the module
    docstring): ``miss_start``, ``miss_count`` (N,) int32 and ``data["shared"]["missing_cells"]``.

    ``persons``, ``items``, ``pmf`` (C, Kmax): one PMF per missing cell of ``responses``
    (every missing cell exactly once, in any order).

    Parameters
    ----------
    responses : array (N, I)
        Integer responses, negative for missing.
    persons : array (C,)
        Person of each missing cell.
    items : array (C,)
        Item of each missing cell.
    pmf : array (C, Kmax)
        Imputation PMF of each missing cell (normalised here); zero beyond the item's categories.
    n_categories : array (I,)
        Categories per item.

    Returns
    -------
    dict
        ``miss_start`` and ``miss_count`` (N,) int32, and ``{SHARED: {CELLS: MissingCells}}``.

    Raises
    ------
    ValueError
        If the PMFs have the wrong shape, do not cover exactly the missing cells (once each), or
        are negative, non-finite or nonzero beyond an item's categories.
    """
    y = np.asarray(responses)
    persons, items = np.asarray(persons, np.int64), np.asarray(items, np.int64)
    pmf = np.asarray(pmf, np.float64)
    n, n_items = y.shape
    kmax = int(np.max(n_categories))
    if pmf.shape != (persons.size, kmax):
        raise ValueError(f"imputation PMFs have shape {pmf.shape}, expected ({persons.size}, {kmax})")
    missing = y < 0
    if persons.size != missing.sum() or not np.all(missing[persons, items]):
        raise ValueError("imputation PMFs must be given for exactly the missing cells of the responses")
    if np.unique(persons * n_items + items).size != persons.size:
        raise ValueError("imputation PMFs: a missing cell is listed twice")
    n_cat = np.asarray(n_categories)[items]
    beyond = np.arange(kmax)[None] >= n_cat[:, None]
    if np.any(pmf < 0) or not np.all(np.isfinite(pmf)) or np.any(pmf[beyond] > 0):
        raise ValueError("imputation PMFs must be finite, non-negative and zero beyond an item's categories")
    pmf = pmf / pmf.sum(-1, keepdims=True)

    count = missing.sum(1).astype(np.int64)
    order = np.lexsort((items, persons))
    persons, items, pmf, n_cat = persons[order], items[order], pmf[order], n_cat[order]
    cdf = np.cumsum(pmf, -1)[:, : kmax - 1]
    cdf[np.arange(kmax - 1)[None] >= (n_cat - 1)[:, None]] = 1.0  # exact 1 from the last category on
    cells = _Cells(persons, items, pmf, cdf, count, n_items)
    return _data(cells, cells.layout())


def from_dense_pmf(responses: np.ndarray, dense_pmf: np.ndarray, n_categories: np.ndarray) -> dict:
    """``imputation_data`` from an (N, I, Kmax) array whose missing cells hold their PMFs.

    Parameters
    ----------
    responses : array (N, I)
        Integer responses, negative for missing.
    dense_pmf : array (N, I, Kmax)
        Imputation PMFs; only the missing cells' are read.
    n_categories : array (I,)
        Categories per item.

    Returns
    -------
    dict
        As ``imputation_data`` returns it.
    """
    persons, items = np.nonzero(np.asarray(responses) < 0)
    return imputation_data(responses, persons, items, np.asarray(dense_pmf)[persons, items], n_categories)


def _unpadded(data: dict) -> _Cells:
    c = data[SHARED][CELLS]
    if c.padded:
        raise ValueError("the missing cells are already laid out for a block")
    n_items = int(np.asarray(data["y"]).shape[1])
    return _Cells(
        np.asarray(c.person, np.int64),
        np.asarray(c.item, np.int64),
        np.asarray(c.pmf, np.float64),
        np.asarray(c.cdf, np.float64),
        np.asarray(data["miss_count"], np.int64),
        n_items,
    )


def block_data(datas: list[dict]) -> list[dict]:
    """The data of the fits of one block (``inference.execution.bulk``) with their missing cells in one
    layout, the largest of theirs: flat lists, item blocks and minibatch caps padded to the
    block's largest (item blocks only where every fit uses them). Each fit still draws the
    imputations it draws alone (see the module docstring). Data without missing cells, or whose
    cells already share one layout, are returned as they are.

    Parameters
    ----------
    datas : list of dict
        Each fit's data: ``"y"`` (N, I) and the entries of ``imputation_data``.

    Returns
    -------
    list of dict
        The same data, their ``MissingCells`` of one shape.
    """
    if not datas or any(CELLS not in d.get(SHARED, {}) for d in datas):
        return datas
    shapes = [jax.tree.structure(d) for d in datas], [jax.tree.map(jnp.shape, d) for d in datas]
    if all(s == shapes[0][0] for s in shapes[0]) and all(s == shapes[1][0] for s in shapes[1]):
        return datas  # one layout already: nothing to pad
    cells = [_unpadded(d) for d in datas]
    own = [c.layout() for c in cells]
    caps = np.max([o.batch_cap for o in own], axis=0)
    layout = Layout(
        n_cells=max(o.n_cells for o in own),
        cmax=max(o.cmax for o in own),
        blocks=all(o.blocks for o in own),
        batch_cap=tuple(int(c) for c in caps),
        padded=True,
    )
    return [{**d, **_data(c, layout)} for d, c in zip(datas, cells, strict=True)]


# ----------------------------------------------------------------------------- a batch's cells


def missing_cells(batch) -> MissingCells | None:
    """The missing cells a batch carries (``batch[SHARED][CELLS]``).

    Parameters
    ----------
    batch : dict
        A batch of the training driver.

    Returns
    -------
    MissingCells or None
        The cells; None when the batch has no missing cells (decided from shapes, so static
        under jit).
    """
    cells = batch.get(SHARED, {}).get(CELLS)
    return cells if cells is not None and cells.n_cells > 0 else None  # static under jit


class CellView(NamedTuple):
    """The missing cells of one batch: ``persons`` (positions in the batch) and ``items``
    broadcast together to the cells' shape (C,) or (I, Cmax); ``pmf``, ``cdf`` have that
    shape plus the category axis; ``valid`` masks padding (None: no padding); ``draw``
    (padded cells only, else None): each slot's position in the fit's own layout and the
    number of positions there, where its imputations are drawn (``uniform_at``)."""

    persons: jnp.ndarray
    items: jnp.ndarray
    pmf: jnp.ndarray
    cdf: jnp.ndarray
    valid: jnp.ndarray | None
    sorted: bool  # persons non-decreasing in the flattened cell order
    draw: tuple | None = None


def batch_cells(batch, cells: MissingCells) -> CellView:
    """The cells of the batch's persons. A batch of every person, in order (the driver's full
    batch), uses the cells as stored: item blocks if present, else the flat list. A minibatch of
    B persons gathers its persons' cells from the flat list into ``batch_cap[B]`` slots.

    Parameters
    ----------
    batch : dict
        A batch of the training driver, with ``miss_start`` and ``miss_count`` (B,).
    cells : MissingCells
        The fit's missing cells.

    Returns
    -------
    CellView
        The batch's cells, of shape (I, Cmax) (item blocks), (C,) (flat list) or
        (``batch_cap[B]``,) (a minibatch, at least one slot).
    """
    n_batch = batch["miss_count"].shape[0]
    padded = cells.padded
    if n_batch == cells.n_persons:
        if cells.blocks:
            items = jnp.arange(cells.block_person.shape[0])[:, None]
            draw = (cells.block_draw_at, cells.draw_size) if padded else None
            return CellView(cells.block_person, items, cells.block_pmf, cells.block_cdf, cells.block_valid, False, draw)
        valid, draw = (cells.valid, (cells.draw_at, cells.draw_size)) if padded else (None, None)
        return CellView(cells.person, cells.item, cells.pmf, cells.cdf, valid, True, draw)
    cap = max(cells.batch_cap[n_batch], 1)
    count, start = batch["miss_count"], batch["miss_start"]
    ends = jnp.cumsum(count)
    j = jnp.arange(cap)
    b = jnp.minimum(jnp.searchsorted(ends, j, side="right"), n_batch - 1).astype(jnp.int32)
    valid = j < ends[-1]
    rows = jnp.where(valid, start[b] + j - (ends[b] - count[b]), 0)
    draw = (j, jnp.maximum(cells.own_cap[n_batch], 1)) if padded else None
    return CellView(b, cells.item[rows], cells.pmf[rows], cells.cdf[rows], valid, True, draw)


# ----------------------------------------------------------------------------- random numbers


def uniform_at(key, positions) -> jnp.ndarray:
    """The uniforms on [0, 1) that ``jax.random.uniform(key, shape)`` (float32) has at the flat
    ``positions`` of ``shape``: with the partitionable threefry generator (JAX's default) each
    element's bits depend on its key and flat position only, so a fit can draw the numbers of
    its own layout inside a larger, padded one (a unit test holds the two equal).

    Parameters
    ----------
    key : jax.Array
        A threefry key (typed or raw uint32[2]).
    positions : array of int
        Flat positions, below 2**32.

    Returns
    -------
    jax.Array
        float32, the shape of ``positions``.
    """
    if not jax.config.jax_threefry_partitionable:
        raise ValueError(
            "uniform_at reproduces JAX's partitionable threefry generator only (its default): "
            "unset jax_threefry_partitionable=False to fit replications in blocks"
        )
    if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        if "threefry" not in str(jax.random.key_impl(key)):
            raise ValueError(f"uniform_at needs a threefry key (JAX's default), not {jax.random.key_impl(key)}")
        key = jax.random.key_data(key)
    lo = jnp.asarray(positions).astype(jnp.uint32)
    # the primitive's lowering needs its four arguments of one shape, under vmap too (where a
    # constant such as zeros_like(lo) would stay unbatched): all four are computed from ``lo``
    hi = lo ^ lo
    bits1, bits2 = threefry2x32_p.bind(hi + key[0], hi + key[1], hi, lo)
    mantissa = jax.lax.shift_right_logical(bits1 ^ bits2, jnp.uint32(32 - 23))
    one = jnp.uint32(np.array(1.0, np.float32).view(np.uint32))
    return jax.lax.bitcast_convert_type(mantissa | one, jnp.float32) - jnp.float32(1.0)


def draw_uniforms(key, n_copies: int, view: CellView) -> jnp.ndarray:
    """(M, *cell shape) uniforms that draw the imputations of ``view``'s cells: those of
    ``jax.random.uniform(key, (M, *own shape))`` at each cell's position in its fit's own layout
    (padded cells), or that draw itself on the cells' shape.

    Parameters
    ----------
    key : jax.Array
        PRNG key.
    n_copies : int
        M, imputations per cell.
    view : CellView
        The batch's cells.

    Returns
    -------
    jax.Array
        Uniforms on [0, 1), shape (M, *cell shape), of the CDFs' dtype.

    Raises
    ------
    ValueError
        If the draw's positions would not fit in 32 bits (padded cells).
    """
    shape = (n_copies,) + view.cdf.shape[:-1]
    if view.draw is None:
        return jax.random.uniform(key, shape, view.cdf.dtype)
    at, size = view.draw
    bound = n_copies * max(int(np.prod(view.cdf.shape[:-1])) * 2, 1)  # own layouts are at most 1.5x the cells
    if bound >= 2**32:
        raise ValueError(f"{n_copies} copies of {view.cdf.shape[:-1]} cells: too many draws for 32-bit positions")
    m = jnp.arange(n_copies, dtype=jnp.uint32).reshape((n_copies,) + (1,) * at.ndim)
    return uniform_at(key, m * jnp.asarray(size).astype(jnp.uint32) + jnp.asarray(at).astype(jnp.uint32)[None])
