"""The training driver's stopping rules, and the averaging of a converged fit's last iterates.

The driver (``inference.execution.training.train``) keeps the loss of every step and, under the noise
rule, per compiled chunk the sums of the gradients, of their squares and of the iterates; after
each chunk it applies the rule chosen by ``TrainSettings.stopping``. The relative rule is a
comparison of two means written in the driver's loop; this module holds what the noise rule
computes: the block geometry (:func:`blocks`), the test of the loss trend (:func:`trend`,
:class:`Trend`), the gradient drift (:func:`gradient_drift`) and the tail average
(:func:`tail_average`). Every fit also reports the trend test of its last windows, whichever
rule stopped it.

Stopping rule ``stopping="noise"`` (opt-in; the default is still ``"relative"``, below). The
loss history is cut into blocks: one epoch per block for minibatch fits (every person is seen
once per block, so the spread between minibatches cancels in a block's mean), ``window // 4``
steps per block for full-batch fits.
Each test fits a least-squares line to the means of the last ``2 * W`` complete blocks (two
windows back to back; minibatch fits: ``W = window_epochs`` epochs, or more when that is
shorter than ``window`` steps; full batch: 10 blocks of ``window // 4`` steps),
and takes the standard error of its slope from the scatter of those block means about the line
(batch means: blocks much longer than the loss's autocorrelation behave as independent draws,
so their scatter measures the noise, autocorrelation included). The improvement is real when
minus the slope exceeds the one-sided Student-t quantile (``confidence``, ``2W - 2`` degrees of
freedom) times its standard error; the fit stops once the improvement has been
indistinguishable from zero in ``patience`` consecutive tests, its estimate per ``window``
steps below ``rel_tol`` of the loss (a floor that only matters when the loss is so noisy that
the test has little power: e.g. minibatch ADVI with few steps per epoch), and the parameters
no longer drift: over the same window, the mean gradient of each parameter array must be
within its noise (``gradient_drift``: the mean over the array's entries of n mean(g)^2 / var(g),
about 1 or less at a stationary point, at most ``drift_max``). The loss alone is a weak witness
at small learning rates: it can look flat while the parameters still creep, and the gradients
show it (with the drift check such fits run on and say that they are still moving).
A converged fit returns its iterates averaged over that window (Polyak-Ruppert averaging;
``average_tail``), which removes the scatter of the last iterate about the optimum. What no test
on a window can see is an optimiser that hovers about the wrong point: Adam at a constant
learning rate settles where its normalised steps balance, at a distance from the optimum that
grows with the rate, so keep the learning-rate decay. Tests start at ``min_steps`` and
are made only when a new block has completed; ``max_steps`` ends the fit regardless. The result
reports the last test's slope (loss change per epoch, or per step for full batch) with its
standard error, why the fit stopped, and whether it hit ``max_steps`` still improving.
Unlike a relative tolerance, this does not stop a fit whose loss is still falling steadily but
slowly (small learning rates, small batches), and needs no retuning when the loss's scale or
noise changes.

There is no early stopping on a held-out bound for the amortized methods: their held-out persons
are the ones the studies score the fits on, so stopping on them would bias that score upwards
(an honest version needs a third split), an importance-sampled held-out bound costs more than
many epochs of training at these sizes, and the epoch-block means of the training loss are
already nearly free of minibatch noise. Overfitting of the encoder would show as a held-out
bound that falls below the training one in the study tables.

``stopping="relative"`` (the default) is the rule used before: the mean of the last ``window``
steps against the ``window`` before, stopping after ``patience`` checks whose relative
improvement is below ``rel_tol``. It stays the default because the noise rule makes tuned fits
several times longer, and because on the benchmark case ``convergence_grid`` the one target it
misses (IWAE loading RMSE) is one no rule that reads the objective can meet: on that design one
loading trades off against a factor correlation along a nearly flat ridge, and the converged
fits' held-out log-likelihoods cannot be told apart while their loading RMSEs differ (the
Performance page of the documentation has the figures). Whichever rule
stops a fit, the result carries the noise test of its last windows (``convergence["improving"]``),
so a fit that the relative rule stopped while its loss was still falling beyond its noise is
flagged in its record (``loss_still_improving``) and in the reports.

``stopping="best"`` is seed 003's rule (section 3.4), used by its as-written methods: the mean
loss of each ``window`` steps, stopping once ``patience`` such means set no new best.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

# the t quantile from scipy.special, not scipy.stats: importing scipy.stats costs about a second
# in every workflow job
from scipy.special import stdtrit

STOPPING_RULES = ("noise", "relative", "best")
# noise rule, full batch: blocks of window // 4 steps, this many per window (2.5 x window steps:
# the Monte Carlo noise of a full-batch ELBO hides slow improvements over shorter stretches)
FULL_BATCH_BLOCKS = 10


@dataclass(frozen=True)
class Trend:
    """The noise rule's test on the last ``2 * blocks_per_window`` complete blocks.

    Attributes
    ----------
    slope : float
        Loss change per block (per epoch, or per step for full batch); < 0 is improvement.
    slope_se : float
        Standard error of the slope.
    slope_unit : str
        ``"epoch"`` or ``"step"``.
    threshold : float
        Minus the slope must exceed this (t quantile x standard error) to count.
    improving : bool
        Whether the improvement is distinguishable from noise.
    mean : float
        Mean loss over the blocks.
    """

    slope: float  # loss change per block (per epoch, or per step for full batch); < 0 is improvement
    slope_se: float
    slope_unit: str  # "epoch" or "step"
    threshold: float  # minus the slope must exceed this (t quantile x standard error) to count
    improving: bool  # improvement distinguishable from noise
    mean: float  # mean loss over the blocks

    def as_dict(self) -> dict:
        return {
            "slope": self.slope,
            "slope_se": self.slope_se,
            "slope_unit": self.slope_unit,
            "improving": self.improving,
        }


def blocks(n_persons: int, settings) -> tuple[int, int, str]:
    """Steps per block, blocks per window and the slope's unit for the noise rule.

    Parameters
    ----------
    n_persons : int
        N, the number of persons.
    settings : training.TrainSettings
        The batch size and window settings.

    Returns
    -------
    tuple of (int, int, str)
        (steps per block, blocks per window, unit of the reported slope: ``"epoch"`` or ``"step"``).
    """
    batch_size = min(settings.batch_size or n_persons, n_persons)
    if batch_size >= n_persons:
        return max(settings.window // 4, 1), FULL_BATCH_BLOCKS, "step"
    per_epoch = max(n_persons // batch_size, 1)
    # ``window`` steps stay a floor on the window: with few steps per epoch, a few epochs are too
    # short a stretch of noisy loss to see a slow improvement in
    return per_epoch, max(settings.window_epochs, -(-settings.window // per_epoch), 2), "epoch"


def trend(history: np.ndarray, block: int, per_window: int, unit: str, confidence: float) -> Trend | None:
    """The noise rule's test of whether the loss still falls.

    Least-squares slope of the last ``2 * per_window`` complete block means against the block
    index, its standard error from their scatter about the line, and whether minus the slope
    exceeds the one-sided t quantile times that error.

    Parameters
    ----------
    history : numpy.ndarray
        The losses so far, shape (steps,).
    block : int
        Steps per block.
    per_window : int
        Blocks per window.
    unit : str
        Unit of the slope (``"epoch"`` or ``"step"``).
    confidence : float
        One-sided level of the t test.

    Returns
    -------
    Trend or None
        The test; None while too few blocks exist.
    """
    n = 2 * per_window
    complete = len(history) // block
    if complete < n:
        return None
    means = history[(complete - n) * block : complete * block].reshape(n, block).mean(axis=1).astype(np.float64)
    x = np.arange(n) - (n - 1) / 2
    slope = float(x @ (means - means.mean()) / (x @ x))
    resid = means - means.mean() - slope * x
    se = float(np.sqrt(resid @ resid / (n - 2) / (x @ x)))
    # a floor at float32 resolution, so a noiseless loss that creeps by rounding still stops
    threshold = max(float(stdtrit(n - 2, confidence)) * se, 1e-7 * abs(float(means.mean())))
    per_step = unit == "step"
    scale = 1.0 / block if per_step else 1.0  # full batch: per block -> per step
    return Trend(slope * scale, se * scale, unit, threshold * scale, -slope > threshold, float(means.mean()))


# gradient drift: one array's entries count at most this much each (a parameter whose gradient
# has no noise at all, e.g. one that only the prior touches, would otherwise give n * g^2 / 0)
DRIFT_CAP = 100.0


def _window_total(chunk_sums: list, part: int):
    """One of the chunks' sums (0: gradients, 1: squared gradients, 2: iterates) added up over
    the window, in float64 (the per-chunk sums are float32)."""
    return jax.tree.map(lambda *xs: np.sum(np.stack(xs).astype(np.float64), axis=0), *[c[part] for c in chunk_sums])


def gradient_drift(chunk_sums: list, steps_per_chunk: int) -> tuple[float, str]:
    """Whether the parameters still drift, from the gradients of the last window's steps.

    For every parameter entry, z^2 = n mean(g)^2 / var(g) over the n steps of the window (the
    squared t statistic of the mean gradient, steps treated as independent); an array's drift is
    the mean of its entries' z^2 (each capped at ``DRIFT_CAP``). At a stationary point the
    gradients average out and the drift is about 1, or less, since an optimiser hovering about a
    minimum pulls its iterates back and makes successive gradients negatively correlated; a fit
    still moving along a direction, however slowly its loss falls (a small learning rate, a flat
    ridge), has a mean gradient that grows out of its noise as n grows.

    Parameters
    ----------
    chunk_sums : list
        Per chunk, the sums of the gradients and of their squares (pytrees like the parameters),
        as the training driver's compiled chunks return them (``inference.execution.training_chunks.chunk_fn``).
    steps_per_chunk : int
        Steps per chunk.

    Returns
    -------
    tuple of (float, str)
        The largest drift over the arrays and that array's name.
    """
    n = steps_per_chunk * len(chunk_sums)
    g, g2 = _window_total(chunk_sums, 0), _window_total(chunk_sums, 1)
    worst, name = 0.0, ""
    for (path, total), total_sq in zip(jax.tree_util.tree_flatten_with_path(g)[0], jax.tree.leaves(g2)):
        mean, mean_sq = total / n, total_sq / n
        var = np.maximum(mean_sq - mean * mean, 1e-6 * mean_sq)  # floor: float32 rounding of the sums
        z2 = np.where(mean_sq > 0, n * mean * mean / np.where(var > 0, var, 1.0), 0.0)
        drift = float(np.mean(np.minimum(z2, DRIFT_CAP))) if z2.size else 0.0
        if drift >= worst:
            worst, name = drift, jax.tree_util.keystr(path, simple=True, separator=".")
    return worst, name


def tail_average(chunk_sums: list, steps_per_chunk: int, like):
    """The iterates averaged over the chunks' steps.

    Polyak-Ruppert averaging of the last window: at a stationary point the iterates scatter
    about the optimum by an amount that grows with the learning rate, and their mean is closer
    to it than the last one.

    Parameters
    ----------
    chunk_sums : list
        Per chunk, the sums the training driver's compiled chunks return (the third: iterates).
    steps_per_chunk : int
        Steps per chunk.
    like : pytree
        Parameters whose dtypes the average takes.

    Returns
    -------
    pytree
        The averaged parameters, cast like ``like``.
    """
    n = steps_per_chunk * len(chunk_sums)
    return jax.tree.map(lambda total, p: jnp.asarray(total / n, p.dtype), _window_total(chunk_sums, 2), like)


class Stopper:
    """One fit's stopping state, fed chunk by chunk: the loss history, the rule's counters and,
    under the noise rule, the gradient sums of the chunks of the test's window.

    The training driver (``training.train``) keeps one; the bulk driver (``bulk.train_block``)
    keeps one per replication, so a replication in a block stops exactly where it would alone.

    Parameters
    ----------
    settings : training.TrainSettings
        The stopping rule and its settings.
    n_persons : int
        N, for the noise rule's blocks.
    """

    def __init__(self, settings, n_persons: int):
        self.settings = settings
        self.block, self.per_window, self.unit = blocks(n_persons, settings)
        self.track = settings.stopping == "noise"
        self.losses: list[np.ndarray] = []
        self.steps, self.stalls, self.tested_blocks, self.averaged = 0, 0, 0, 0
        self.converged, self.stop_reason = False, "max_steps"
        self.reason = f"reached max_steps={settings.max_steps}"
        self.best = np.inf  # the "best" rule's lowest window mean so far
        self.last: Trend | None = None
        self.recent: deque = deque(maxlen=max(-(-2 * self.per_window * self.block // settings.check_every), 2))
        self.drift, self.drift_array = None, None

    def history(self) -> np.ndarray:
        """The loss of every step so far."""
        return np.concatenate(self.losses) if self.losses else np.zeros(0)

    def update(self, chunk_losses: np.ndarray, sums=None) -> bool:
        """Take one chunk's losses (and, under the noise rule, its gradient sums, on the host);
        True when the fit has converged and stops here."""
        s = self.settings
        self.losses.append(chunk_losses)
        if self.track:
            self.recent.append(sums)
        self.steps += s.check_every
        history = self.history()
        if s.stopping == "relative":
            if self.steps >= max(s.min_steps, 2 * s.window):
                recent = history[-s.window :].mean()
                before = history[-2 * s.window : -s.window].mean()
                improvement = (before - recent) / max(abs(recent), 1e-12)
                self.stalls = self.stalls + 1 if improvement < s.rel_tol else 0
                if self.stalls >= s.patience:
                    self.converged, self.stop_reason = True, "relative_tolerance"
                    self.reason = (
                        f"windowed loss improved by less than {s.rel_tol:g} (relative) for {s.patience} checks"
                    )
        elif s.stopping == "best":
            # seed 003, section 3.4: the mean loss of each ``window`` steps (with check_every =
            # window, disjoint windows); stop once ``patience`` such means set no new best
            if self.steps >= max(s.min_steps, s.window) and self.steps // s.window > self.tested_blocks:
                self.tested_blocks = self.steps // s.window
                mean = float(history[-s.window :].mean())
                self.best, self.stalls = (mean, 0) if mean < self.best else (self.best, self.stalls + 1)
                if self.stalls >= s.patience:
                    self.converged, self.stop_reason = True, "no_new_best"
                    self.reason = f"the mean loss of {s.window} steps set no new best in {s.patience} windows"
        elif self.steps >= s.min_steps and self.steps // self.block > self.tested_blocks:
            self._noise_test(history)
        return self.converged

    def _noise_test(self, history: np.ndarray) -> None:
        # one test per newly completed block, so patience counts fresh evidence
        s = self.settings
        self.tested_blocks = self.steps // self.block
        self.last = trend(history, self.block, self.per_window, self.unit, s.confidence) or self.last
        if self.last is None:
            return
        # the estimated improvement per ``window`` steps must also be below rel_tol (relative):
        # with a very noisy loss and little power, "indistinguishable from zero" alone would stop
        # a fit whose estimated slope is still large
        per_step = self.last.slope if self.unit == "step" else self.last.slope / self.block
        large = -per_step * s.window > s.rel_tol * max(abs(self.last.mean), 1e-12)
        # and the parameters must have stopped drifting: a loss can look flat while the fit still
        # creeps along a flat direction (small learning rates)
        if len(self.recent) == self.recent.maxlen:
            self.drift, self.drift_array = gradient_drift(list(self.recent), s.check_every)
        moving = self.drift is None or self.drift > s.drift_max
        self.stalls = 0 if (self.last.improving or large or moving) else self.stalls + 1
        if self.stalls >= s.patience:
            self.converged, self.stop_reason = True, "no_improvement"
            self.reason = (
                f"windowed loss slope {self.last.slope:.3g} +- {self.last.slope_se:.2g} per {self.unit} over "
                f"the last {2 * self.per_window * self.block} steps and gradient drift {self.drift:.2g} "
                f"(largest in {self.drift_array}): no improvement distinguishable from noise "
                f"for {s.patience} tests"
            )

    def final_params(self, params):
        """A converged noise-rule fit's iterates averaged over the test's window (``average_tail``);
        otherwise ``params``."""
        if self.converged and self.track and self.settings.average_tail:
            self.averaged = self.settings.check_every * len(self.recent)
            return tail_average(list(self.recent), self.settings.check_every, params)
        return params

    def summary(self) -> tuple[np.ndarray, bool, str, dict]:
        """The loss history, whether the fit converged, why it stopped (in words) and the
        ``convergence`` entry of its result: the trend test of its last windows, whichever rule
        stopped it, and whether it hit ``max_steps`` still improving."""
        s = self.settings
        history = self.history()
        final = trend(history, self.block, self.per_window, self.unit, s.confidence)
        if self.track and not self.converged and len(self.recent) == self.recent.maxlen:
            self.drift, self.drift_array = gradient_drift(list(self.recent), s.check_every)
        drifting = self.track and (self.drift is None or self.drift > s.drift_max)
        still_improving = self.stop_reason == "max_steps" and (final is None or final.improving or drifting)
        reason = self.reason
        if still_improving:
            reason += " while still improving" + (
                ""
                if final is None
                else f" (loss slope {final.slope:.3g} +- {final.slope_se:.2g} per {self.unit}"
                + (f", gradient drift {self.drift:.2g} in {self.drift_array})" if self.drift is not None else ")")
            )
        no_trend = {"slope": None, "slope_se": None, "slope_unit": self.unit, "improving": None}
        convergence = {
            "stopping": s.stopping,
            "stop_reason": self.stop_reason,
            **(final.as_dict() if final is not None else no_trend),
            "max_steps_still_improving": still_improving,
            "gradient_drift": self.drift,
            "gradient_drift_array": self.drift_array,
            "averaged_steps": self.averaged,
        }
        return history, self.converged, reason, convergence
