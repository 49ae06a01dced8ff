"""Seed 003's optimiser and starting values for the amortized GRM methods (``iwae_seed``,
``iwavb_seed``), as its section 3.4 states them, beside the project's own (``iw_bound.adamw`` and
``mgrm.init_params`` with data-based cuts).

* AdamW on every parameter, decoder included (eqs. 19-21: beta1 = 0.9, beta2 = 0.999,
  lambda = 0.01, epsilon = 1e-8), each part at its own base learning rate;
* a cyclical learning rate (Smith 2017) between the base rate and ``max_ratio`` times it
  ("the upper bound was set to five times the base value"). The seed names neither the
  cycle's form nor its length: the triangular form and its half-cycle (``half_cycle``) are this
  project's choices (``SeedOptimizer``'s callers hold the value);
* no gradient clipping (the seed describes none);
* Kaiming-uniform weights and biases for the encoder and discriminator, U(+-sqrt(3 / fan_in))
  at full scale on every layer (eq. 17), and Xavier-uniform loadings and intercepts for the
  decoder, U(+-sqrt(2 / (P + M))) (eq. 18). The GRM needs ordered intercepts: the draws are
  sorted (the seed does not say how it orders them; this is our reading).

The stopping rule (``training.TrainSettings(stopping="best")``) is in ``inference.execution.stopping``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayesirt.models import mgrm

# seed 003, section 3.4 (eqs. 19-21): "(beta1 = 0.9, beta2 = 0.999, lambda = 0.01, epsilon = 1e-8)"
ADAMW_B1 = 0.9
ADAMW_B2 = 0.999
ADAMW_EPS = 1e-8
# eq. 17: networks' weights and biases ~ U(+-sqrt(KAIMING_NUMERATOR / P_{l-1}))
KAIMING_NUMERATOR = 3.0
# eq. 18: loadings and intercepts ~ U(+-sqrt(XAVIER_NUMERATOR / (P + M)))
XAVIER_NUMERATOR = 2.0


@dataclass(frozen=True)
class SeedOptimizer:
    """AdamW with a triangular cyclical learning rate on every part of the parameters.

    ``weight_decay``: AdamW's lambda; ``max_ratio``: the upper bound of the cycle over the base
    rate; ``half_cycle``: steps from the base rate to the upper bound (and as many back)."""

    weight_decay: float = 0.01
    max_ratio: float = 5.0
    half_cycle: int = 2000


def cyclical_rate(base: float, max_ratio: float, half_cycle: int):
    """Triangular cyclical learning rate (Smith 2017): ``base`` at step 0, rising linearly to
    ``max_ratio * base`` at ``half_cycle`` steps, back to ``base`` at ``2 * half_cycle``, and so on.

    optax has no cyclical schedule (its one-cycle and warm-restart schedules do not repeat a
    triangle), so this is the few lines of it.

    Parameters
    ----------
    base : float
        The lowest rate, at step 0.
    max_ratio : float
        The highest rate over ``base``.
    half_cycle : int
        Steps from the lowest rate to the highest.

    Returns
    -------
    callable
        ``schedule(count)``: the rate at step ``count``, a float32 scalar.
    """

    def schedule(count):
        x = jnp.abs(jnp.mod(jnp.asarray(count, jnp.float32) / half_cycle, 2.0) - 1.0)  # 1 at the base, 0 at the top
        return base * (1.0 + (max_ratio - 1.0) * (1.0 - x))

    return schedule


def optimizer(seed: SeedOptimizer, learning_rates: dict, params: dict) -> optax.GradientTransformation:
    """AdamW at the seed's settings for each top-level part of ``params`` (``learning_rates``:
    each part's base rate), weight decay on every part, no clipping.

    Parameters
    ----------
    seed : SeedOptimizer
        Weight decay and the cycle (``max_ratio``, ``half_cycle``).
    learning_rates : dict
        Base learning rate by part name, one for every top-level key of ``params``.
    params : dict
        The parameters (only their structure is read: each leaf is labelled with its part).

    Returns
    -------
    optax.GradientTransformation
        ``optax.multi_transform`` of one AdamW with :func:`cyclical_rate` per part.
    """

    def part(lr):
        return optax.adamw(
            cyclical_rate(lr, seed.max_ratio, seed.half_cycle),
            b1=ADAMW_B1,
            b2=ADAMW_B2,
            eps=ADAMW_EPS,
            weight_decay=seed.weight_decay,
        )

    labels = {name: jax.tree.map(lambda _: name, sub) for name, sub in params.items()}  # noqa: B023
    return optax.multi_transform({name: part(lr) for name, lr in learning_rates.items()}, labels)


def init(key, st: mgrm.Structure, params: dict) -> dict:
    """The seed's starting values for ``params`` (a method's ``init`` output, for its shapes):
    Xavier decoder (eq. 18) and Kaiming networks (eq. 17), every other array kept.

    Parameters
    ----------
    key : jax.Array
        PRNG key of the draws.
    st : mgrm.Structure
        The model's structure (items, factors, categories).
    params : dict
        ``{"model", ...}``, a method's starting parameters; ``"model"`` is not read (drawn anew),
        the other parts give the networks' shapes.

    Returns
    -------
    dict
        ``"model"``: ``mgrm.init_params`` (Xavier loadings, identity correlation) with cuts from
        sorted Xavier intercepts; every other part with each ``{"w", "b"}`` layer redrawn
        Kaiming-uniform and any other array kept.
    """
    k_model, k_cuts, k_net = jax.random.split(key, 3)
    # Xavier loadings (eq. 18; mgrm.init_params draws them with the same bound); identity correlation
    model = mgrm.init_params(k_model, st)
    n_items, kmax = st.n_items, st.max_categories
    limit = float(np.sqrt(XAVIER_NUMERATOR / (st.n_factors + n_items)))
    alpha = np.asarray(jax.random.uniform(k_cuts, (n_items, max(kmax - 1, 1)), minval=-limit, maxval=limit))
    # cuts are minus the intercepts; sorted (and kept strictly apart) so the GRM's order holds
    cuts = np.sort(-alpha, axis=1) + np.arange(alpha.shape[1]) * 1e-3
    gaps = np.diff(cuts, axis=1)
    model["cut_base"] = jnp.asarray(cuts[:, 0], jnp.float32)
    model["cut_increments"] = jnp.asarray(np.log(np.expm1(gaps)), jnp.float32).reshape(model["cut_increments"].shape)
    out = {"model": model}
    for i, (name, part) in enumerate(sorted((k, v) for k, v in params.items() if k != "model")):
        out[name] = _kaiming(jax.random.fold_in(k_net, i), part)
    return out


def _kaiming(key, tree):
    """Every layer ``{"w": (fan_in, fan_out), "b"}`` in ``tree`` redrawn from U(+-sqrt(3 / fan_in))."""
    if isinstance(tree, dict) and set(tree) == {"w", "b"}:
        kw, kb = jax.random.split(key)
        bound = float(np.sqrt(KAIMING_NUMERATOR / tree["w"].shape[0]))
        return {
            "w": jax.random.uniform(kw, tree["w"].shape, minval=-bound, maxval=bound),
            "b": jax.random.uniform(kb, tree["b"].shape, minval=-bound, maxval=bound),
        }
    if isinstance(tree, dict):
        return {k: _kaiming(jax.random.fold_in(key, i), v) for i, (k, v) in enumerate(sorted(tree.items()))}
    if isinstance(tree, list):
        return [_kaiming(jax.random.fold_in(key, i), v) for i, v in enumerate(tree)]
    return tree
