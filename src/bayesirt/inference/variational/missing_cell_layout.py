"""How the missing cells of a fit with an imputation objective sit in its data (the layout that
``inference.variational.missing_cells`` builds and reads): the ``MissingCells`` pytree, and the placement of
a fit's cells in a layout, its own or a block's larger one.

A fit's cells form a flat list sorted by person, which minibatches gather from; when padding
every item's cells to the largest per-item count costs at most ``BLOCK_WASTE`` times the cells,
they are also kept as one row per item (``block_*``), which a full batch evaluates. In a block
of fits (``padded``) the flat list, the item rows and the minibatch caps take the block's
largest sizes, padding slots are masked out, and every real cell records its position in its
fit's own layout, where its imputations are drawn.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.inference.execution.training import SHARED

CELLS = "missing_cells"  # key of the flat cell list in data[SHARED]
BLOCK_WASTE = 1.5  # item blocks are used when their padded size is at most this times the cells


@dataclasses.dataclass(frozen=True, eq=False)
class MissingCells:
    """The missing cells (a JAX pytree; ``n_persons``, ``batch_cap``, ``blocks`` and ``padded``
    are static).

    As a flat list sorted by person (``person``, ``item``, ``pmf``, ``cdf``; minibatches gather
    from it; ``batch_cap[b]`` is the most cells any b persons have), and, when ``blocks``, as
    one row per item padded to the largest count of any item (``block_*``, (I, Cmax, ...);
    ``block_valid`` marks real cells): a full batch evaluates these, so per-item quantities
    broadcast over a row instead of being gathered per cell and scattered back.

    ``padded`` (a fit of a block, ``block_data``): the flat list has padding at its end
    (``valid`` marks real cells) and the imputations are drawn at each cell's position in the
    fit's own, unpadded layout (``draw_at``, ``block_draw_at``, of ``draw_size`` positions for
    a full batch; ``own_cap[b]`` positions for a minibatch of b persons).
    """

    person: jnp.ndarray  # (C,) int32, non-decreasing
    item: jnp.ndarray  # (C,) int32
    pmf: jnp.ndarray  # (C, Kmax) float32, imputation PMF
    cdf: jnp.ndarray  # (C, Kmax-1) float32, its CDF at 0..Kmax-2 (exactly 1 from the top category on)
    block_person: jnp.ndarray  # (I, Cmax) int32 (0 in padding)
    block_valid: jnp.ndarray  # (I, Cmax) bool
    block_pmf: jnp.ndarray  # (I, Cmax, Kmax)
    block_cdf: jnp.ndarray  # (I, Cmax, Kmax-1)
    valid: jnp.ndarray  # (C,) bool: real cells of the flat list
    draw_at: jnp.ndarray  # (C,) int32: a flat cell's position in its fit's own full-batch layout
    block_draw_at: jnp.ndarray  # (I, Cmax) int32: the same for the item blocks
    draw_size: jnp.ndarray  # () int32: positions of the own full-batch layout
    own_cap: jnp.ndarray  # (N + 1,) int32: the fit's own batch_cap
    n_persons: int = 0
    batch_cap: tuple = (0,)
    blocks: bool = False
    padded: bool = False

    @property
    def n_cells(self) -> int:
        return self.person.shape[0]

    def __eq__(self, other):
        """Equal static fields and equal arrays: what comparing two fits' shapes needs
        (``jax.tree.map(jnp.shape, data)``, as the bulk driver does)."""
        if type(other) is not type(self):
            return NotImplemented
        (mine, tree), (theirs, other_tree) = jax.tree.flatten(self), jax.tree.flatten(other)
        return tree == other_tree and all(np.array_equal(a, b) for a, b in zip(mine, theirs, strict=True))

    __hash__ = None


jax.tree_util.register_dataclass(
    MissingCells,
    data_fields=[
        "person",
        "item",
        "pmf",
        "cdf",
        "block_person",
        "block_valid",
        "block_pmf",
        "block_cdf",
        "valid",
        "draw_at",
        "block_draw_at",
        "draw_size",
        "own_cap",
    ],
    meta_fields=["n_persons", "batch_cap", "blocks", "padded"],
)


class Layout(NamedTuple):
    """The shape of a fit's cells: flat slots, item-block width, whether item blocks are used,
    the minibatch caps, and whether this is a padded (block) layout."""

    n_cells: int
    cmax: int
    blocks: bool
    batch_cap: tuple
    padded: bool = False


class _Cells(NamedTuple):
    """A fit's missing cells, sorted by person then item (numpy)."""

    persons: np.ndarray
    items: np.ndarray
    pmf: np.ndarray  # (C, Kmax) float64, normalised
    cdf: np.ndarray  # (C, Kmax-1)
    count: np.ndarray  # (N,) cells per person
    n_items: int

    def layout(self) -> Layout:
        """The fit's own layout (the one ``imputation_data`` gives it)."""
        per_item = np.bincount(self.items, minlength=self.n_items)
        cmax = int(per_item.max()) if self.persons.size else 0
        blocks = 0 < self.n_items * cmax <= BLOCK_WASTE * self.persons.size
        cap = np.concatenate([[0], np.cumsum(np.sort(self.count)[::-1])])
        return Layout(self.persons.size, cmax, bool(blocks), tuple(int(c) for c in cap))


def _data(cells: _Cells, layout: Layout) -> dict:
    """The fit's data entries with its cells in ``layout`` (its own, or a block's, larger)."""
    persons, items, pmf, cdf, count, n_items = cells
    n, kmax, n_real = count.size, pmf.shape[1], persons.size
    own = cells.layout()
    pad = layout.n_cells - n_real
    per_item = np.bincount(items, minlength=n_items)
    by_item = np.lexsort((persons, items))
    slot = np.arange(n_real) - np.repeat(np.cumsum(per_item) - per_item, per_item)
    # each cell's position in the fit's own full-batch layout (where it draws its imputations)
    own_at = np.arange(n_real)
    if own.blocks:
        own_at = np.empty(n_real, np.int64)
        own_at[by_item] = items[by_item] * own.cmax + slot
    rows, width = (n_items, layout.cmax) if layout.blocks else (0, 0)
    b_person = np.zeros((rows, width), np.int32)
    b_valid = np.zeros((rows, width), bool)
    b_pmf = np.full((rows, width, kmax), 1.0 / kmax, np.float32)  # padding: harmless, masked out
    b_cdf = np.ones((rows, width, kmax - 1), np.float32)
    b_draw = np.zeros((rows, width), np.int32)
    if layout.blocks:
        at = (items[by_item], slot)
        b_person[at], b_valid[at], b_pmf[at], b_cdf[at] = persons[by_item], True, pmf[by_item], cdf[by_item]
        b_draw[at] = own_at[by_item]
    # flat padding: the last person (the list stays sorted), masked out
    flat_person = np.concatenate([persons, np.full(pad, n - 1)])
    cells = MissingCells(
        jnp.asarray(flat_person, jnp.int32),
        jnp.asarray(np.concatenate([items, np.zeros(pad, np.int64)]), jnp.int32),
        jnp.asarray(np.concatenate([pmf, np.full((pad, kmax), 1.0 / kmax)]), jnp.float32),
        jnp.asarray(np.concatenate([cdf, np.ones((pad, kmax - 1))]), jnp.float32),
        jnp.asarray(b_person),
        jnp.asarray(b_valid),
        jnp.asarray(b_pmf),
        jnp.asarray(b_cdf),
        jnp.asarray(np.arange(layout.n_cells) < n_real),
        jnp.asarray(np.concatenate([own_at, np.zeros(pad, np.int64)]), jnp.int32),
        jnp.asarray(b_draw),
        jnp.asarray(n_items * own.cmax if own.blocks else n_real, jnp.int32),
        jnp.asarray(own.batch_cap, jnp.int32),
        n_persons=int(n),
        batch_cap=layout.batch_cap,
        blocks=layout.blocks,
        padded=layout.padded,
    )
    start = np.cumsum(count) - count
    return {
        "miss_start": jnp.asarray(start, jnp.int32),
        "miss_count": jnp.asarray(count, jnp.int32),
        SHARED: {CELLS: cells},
    }
