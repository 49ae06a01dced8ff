"""Checkpoints of a block's fits, so that a block job cut off (a session's end, a cluster's
preemption, a killed run) resumes where it stopped instead of from step 0.

Where the environment variable ``BAYESIRT_CHECKPOINT_DIR`` names a folder (``make run`` sets it),
each group of a block (``bulk_group.Group``) writes its whole state there every
``SAVE_EVERY_SECONDS`` of stepping: the stacked parameters and optimiser state, the step, each
fit's stopping test and the results of the fits that stopped. A job started again on the same
inputs finds the file and goes on from that step. The file is named by a fingerprint of
everything the fits depend on (the compiled program's text, the settings, the program's width,
the fits' starting parameters, keys and data), so a changed method, setting or data set never
resumes a stale state. The step cap (``max_steps``) is left out of it: up to a cap a fit takes
the same steps whatever the cap, so a block fitted again with a larger cap continues a kept
final state of the smaller one (a state saved past the new cap is not resumed). The driver's
minibatches and random numbers are functions of the step (``training_chunks``), so a resumed fit
takes the same steps as one never cut off: its results are identical
(``tests/unit/test_checkpoints.py``), and only its wall time sums the sittings.

Checkpoints live outside the job's outputs because Snakemake removes the outputs of a job cut
off before it runs it again. The block's files are removed once all its groups have finished,
unless ``BAYESIRT_CHECKPOINT_KEEP`` is 1: then a group that stepped for ``SAVE_EVERY_SECONDS`` or
more keeps its final state, so that a rerun finds the blocks it had finished and a refit with a
larger cap continues them (the reproduction tool keeps them for its runs and diagnostics; the
folder may be removed at any time, at the price of fitting again). Without the folder nothing is
written. Hand-written: the state is plain Python and arrays, so pickle holds it; a checkpointing
library (orbax) would add a dependency for one file a group.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import time
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np

log = logging.getLogger("bayesirt")

ENV = "BAYESIRT_CHECKPOINT_DIR"
KEEP_ENV = "BAYESIRT_CHECKPOINT_KEEP"
SAVE_EVERY_SECONDS = 300.0  # a cut-off block loses at most this much stepping (plus one chunk)


def folder() -> Path | None:
    """The checkpoint folder the environment names.

    Returns
    -------
    Path or None
        ``BAYESIRT_CHECKPOINT_DIR``, or None when it is unset or empty (no checkpoints).
    """
    value = os.environ.get(ENV, "")
    return Path(value) if value else None


def keep_finished() -> bool:
    """Whether a finished block keeps its checkpoints.

    Returns
    -------
    bool
        True when ``BAYESIRT_CHECKPOINT_KEEP`` is 1.
    """
    return os.environ.get(KEEP_ENV, "") == "1"


def program_digest(lowered) -> str:
    """A digest of a lowered (not yet compiled) program's text: two programs with the same
    digest compute the same thing.

    Parameters
    ----------
    lowered : jax.stages.Lowered
        The program, as ``jax.jit(f).lower(...)`` gives it.

    Returns
    -------
    str
        The SHA-256 of its text, in hex.
    """
    return hashlib.sha256(lowered.as_text().encode()).hexdigest()


def _digest_tree(hasher, tree) -> None:
    leaves, structure = jax.tree.flatten(tree)
    hasher.update(str(structure).encode())
    for leaf in leaves:
        if hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        array = np.asarray(leaf)
        hasher.update(f"{array.dtype}{array.shape}".encode())
        hasher.update(np.ascontiguousarray(array).tobytes())


class Checkpoint:
    """One group's checkpoint file; ``None`` from ``for_group`` when checkpoints are off.

    Parameters
    ----------
    path : Path
        The file.
    """

    def __init__(self, path: Path):
        self.path = path
        self.last_save = time.perf_counter()

    @classmethod
    def for_group(cls, program: str | None, settings, width: int, inputs) -> Checkpoint | None:
        """The checkpoint of a group whose program has the digest ``program``
        (``program_digest``), with its training settings, program width and starting
        ``inputs`` (any pytree: parameters, keys, data), whatever their step cap; None when
        checkpoints are off."""
        where = folder()
        if where is None or program is None:
            return None
        hasher = hashlib.sha256(program.encode())
        hasher.update(f"{replace(settings, max_steps=0)!r} width={width}".encode())
        _digest_tree(hasher, inputs)
        return cls(where / f"{hasher.hexdigest()[:32]}.pkl")

    def load(self) -> dict | None:
        """The saved state, or None when there is none (or it cannot be read: a file cut off
        while written is never left under the name, see ``save``)."""
        if not self.path.exists():
            return None
        try:
            with self.path.open("rb") as f:
                return pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError) as err:
            log.warning("checkpoint %s could not be read (%s); starting from step 0", self.path, err)
            return None

    def due(self) -> bool:
        """Whether ``SAVE_EVERY_SECONDS`` have passed since the last save (or since start)."""
        return time.perf_counter() - self.last_save >= SAVE_EVERY_SECONDS

    def save(self, state: dict) -> None:
        """Write ``state`` (arrays fetched to the host) under a temporary name, then rename it,
        so that a job killed while writing leaves the previous checkpoint whole."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(f".{os.getpid()}.partial")
        with partial.open("wb") as f:
            pickle.dump(jax.device_get(state), f, protocol=pickle.HIGHEST_PROTOCOL)
        partial.replace(self.path)
        self.last_save = time.perf_counter()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
