"""Logistic IRT with K-dimensional abilities: 1PL, 2PL (binary) and the GRM (ordinal).

    1pl   P(y_ij = 1) = sigmoid(sum_k theta_ik - d_j)          (every discrimination 1)
    2pl   P(y_ij = 1) = sigmoid(a_j . theta_i - d_j)
    grm   P(y_ij >= c) = sigmoid(a_j . theta_i - cut_jc),  c = 1..C_j - 1

The binary cells go through ``twopno.cell_log_prob`` with the logit link and the ordinal ones
through ``grm.log_prob``: this module adds no likelihood of its own, only the parametrization
shared by VIBO, the non-amortized VI baseline, the NUTS reference and the evaluators.

Item parameters live on the real line (the space of the variational family and of NUTS):
``log_discrimination`` (J, K) (discrimination = exp, so positive and the sign of each ability
axis is fixed), ``difficulty`` (J,) for binary items, and for the GRM ``first_cut`` (J,) plus
``log_gaps`` (J, C-2) (cuts = first_cut + cumsum(exp(log_gaps)): ordered by construction).
Priors are independent normals on these unconstrained values (so the discrimination has a
log-normal prior); abilities have an N(0, I) prior. Responses are integers, missing = -1.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.models import grm, twopno

MODELS = ("1pl", "2pl", "grm")
MISSING = -1


@dataclass(frozen=True)
class ItemPriors:
    """Means and standard deviations of the normal priors on the unconstrained item values."""

    difficulty_mean: float = 0.0
    difficulty_sd: float = 1.0
    log_discrimination_mean: float = 0.0
    log_discrimination_sd: float = 0.5
    first_cut_mean: float = -1.0
    first_cut_sd: float = 2.0
    log_gap_mean: float = 0.0
    log_gap_sd: float = 1.0

    def __post_init__(self):
        for key, value in asdict(self).items():
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"prior '{key}' must be a finite number, got {value!r}")
            if key.endswith("_sd") and value <= 0:
                raise ValueError(f"prior '{key}' must be positive, got {value!r}")

    def of(self, name: str) -> tuple[float, float]:
        """(mean, sd) of the prior of the item block ``name``."""
        base = {"log_gaps": "log_gap"}.get(name, name)
        return getattr(self, f"{base}_mean"), getattr(self, f"{base}_sd")


@dataclass(frozen=True)
class Structure:
    """Shape of the model: kind, number of items, ability dimensions, categories per item."""

    model: str
    n_items: int
    n_factors: int = 1
    n_categories: tuple = ()  # per item (GRM); empty for binary models (2 each)

    def __post_init__(self):
        if self.model not in MODELS:
            raise ValueError(f"model '{self.model}' is not known; expected one of {list(MODELS)}")
        if self.n_items < 1:
            raise ValueError(f"n_items must be positive, got {self.n_items}")
        if self.n_factors < 1:
            raise ValueError(f"n_factors must be at least 1, got {self.n_factors}")
        # Ledermann's bound: more factors than this cannot be identified from J items
        if (self.n_items - self.n_factors) ** 2 < self.n_items + self.n_factors:
            raise ValueError(
                f"n_factors={self.n_factors} is more than {self.n_items} items can identify (needs (J - K)^2 >= J + K)"
            )
        if self.model == "grm":
            if len(self.n_categories) != self.n_items or min(self.n_categories) < 2:
                raise ValueError("a GRM structure needs n_categories (>= 2) for each of its items")
        elif self.n_categories and any(c != 2 for c in self.n_categories):
            raise ValueError(
                f"model '{self.model}' is binary; got items with {sorted(set(self.n_categories))} categories"
            )

    @property
    def n_categories_max(self) -> int:
        return max(self.n_categories) if self.model == "grm" else 2

    @property
    def categories(self) -> np.ndarray:
        return np.asarray(self.n_categories if self.model == "grm" else [2] * self.n_items, dtype=np.int32)

    def item_shapes(self) -> dict:
        J, K = self.n_items, self.n_factors
        if self.model == "1pl":
            return {"difficulty": (J,)}
        if self.model == "2pl":
            return {"log_discrimination": (J, K), "difficulty": (J,)}
        return {"log_discrimination": (J, K), "first_cut": (J,), "log_gaps": (J, max(self.n_categories_max - 2, 0))}


def check_responses(y, st: Structure) -> np.ndarray:
    """The response matrix as int8/int16, or a one-line error naming the first bad person/item.

    Parameters
    ----------
    y : array-like (N, J)
        Integer responses, -1 for missing.
    st : Structure
        The model's structure.

    Returns
    -------
    np.ndarray
        The responses, shape (N, J), as int8 (int16 when an item has more than 127 categories).

    Raises
    ------
    ValueError
        If ``y`` is not persons x J items, holds non-integers or a code outside -1..C_j-1, or a
        person or an item has no observed response.
    """
    y = np.asarray(y)
    if y.ndim != 2 or y.shape[1] != st.n_items:
        raise ValueError(f"responses must be persons x {st.n_items} items, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer):
        if not np.all(np.isfinite(y)) or np.any(y != np.round(y)):
            raise ValueError("responses must be integers (missing = -1)")
    top = st.categories[None, :] - 1
    bad = (y < MISSING) | (y > top)
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        raise ValueError(
            f"response {int(y[i, j])} of person {i} to item {j} is outside the model's categories -1..{int(top[0, j])}"
        )
    observed = y != MISSING
    empty_person = np.flatnonzero(~observed.any(1))
    if empty_person.size:
        raise ValueError(f"person {int(empty_person[0])} has no observed response ({empty_person.size} such persons)")
    empty_item = np.flatnonzero(~observed.any(0))
    if empty_item.size:
        raise ValueError(f"item {int(empty_item[0])} has no observed response ({empty_item.size} such items)")
    return y.astype(np.int8 if st.n_categories_max <= 127 else np.int16)


def constrain(items: dict, st: Structure) -> dict:
    """Unconstrained item values -> ``discrimination`` (J, K) and ``difficulty`` (J,) or
    ``cuts`` (J, C-1).

    Parameters
    ----------
    items : dict
        Unconstrained item blocks (``Structure.item_shapes``).
    st : Structure
        The model's structure.

    Returns
    -------
    dict
        ``discrimination`` (J, K) (all ones for the 1PL), and ``difficulty`` (J,) for the binary
        models or ``cuts`` (J, C-1) for the GRM (C the most categories of an item).
    """
    J, K = st.n_items, st.n_factors
    out = {}
    if st.model == "1pl":
        out["discrimination"] = jnp.ones((J, K), items["difficulty"].dtype)
    else:
        out["discrimination"] = jnp.exp(items["log_discrimination"])
    if st.model == "grm":
        out["cuts"] = grm.ordered_cuts(items["first_cut"], jnp.exp(items["log_gaps"]))
    else:
        out["difficulty"] = items["difficulty"]
    return out


def cell_log_likelihood(params: dict, y, st: Structure):
    """log p(y_ij | theta_i, item j) per cell, 0 where missing. theta: (..., B, K); y: (B, J).

    Parameters
    ----------
    params : dict
        ``ability`` (..., B, K), the abilities, and the unconstrained item blocks
        (``Structure.item_shapes``).
    y : array (B, J)
        Integer responses, -1 for missing.
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        log p(y_ij | theta_i, item j), shape (..., B, J); 0 where missing.
    """
    c = constrain(params, st)
    score = params["ability"] @ c["discrimination"].T  # (..., B, J)
    if st.model == "grm":
        return grm.log_prob(y, score, c["cuts"], jnp.asarray(st.categories))
    return twopno.cell_log_prob(y, score - c["difficulty"], link="logit")


def log_likelihood(params: dict, y, st: Structure):
    """Per-person log-likelihood, (..., B).

    Parameters
    ----------
    params : dict
        ``ability`` (..., B, K), the abilities, and the unconstrained item blocks
        (``Structure.item_shapes``).
    y : array (B, J)
        Integer responses, -1 for missing.
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Sum over the observed items of each person, shape (..., B).
    """
    return cell_log_likelihood(params, y, st).sum(-1)


def category_probs(theta, items: dict, st: Structure):
    """P(y_ij = c) for every category: theta (..., B, K) -> (..., B, J, C).

    Parameters
    ----------
    theta : array (..., B, K)
        Abilities.
    items : dict
        Unconstrained item blocks (``Structure.item_shapes``).
    st : Structure
        The model's structure.

    Returns
    -------
    jax.Array
        Shape (..., B, J, C), C = ``st.n_categories_max`` (2 for the binary models); 0 for
        categories an item does not have.
    """
    c = constrain(items, st)
    score = theta @ c["discrimination"].T
    if st.model == "grm":
        return jnp.exp(grm.category_log_probs(score, c["cuts"], jnp.asarray(st.categories)))
    p1 = jax.nn.sigmoid(score - c["difficulty"])
    return jnp.stack([1.0 - p1, p1], axis=-1)


def cell_category_probs(theta_cells, items: dict, st: Structure, cols):
    """P(y = c) at single cells: theta_cells (n, K) of the cells' persons, ``cols`` (n,) their
    items. Returns (n, C); no persons x items intermediate.

    Parameters
    ----------
    theta_cells : array (n, K)
        Abilities of the cells' persons.
    items : dict
        Unconstrained item blocks (``Structure.item_shapes``).
    st : Structure
        The model's structure.
    cols : array (n,) of int
        Item of each cell.

    Returns
    -------
    jax.Array
        Shape (n, C), C = ``st.n_categories_max`` (2 for the binary models).
    """
    c = constrain(items, st)
    score = jnp.sum(theta_cells * c["discrimination"][cols], axis=-1)
    if st.model == "grm":
        return jnp.exp(grm.category_log_probs(score, c["cuts"][cols], jnp.asarray(st.categories)[cols]))
    p1 = jax.nn.sigmoid(score - c["difficulty"][cols])
    return jnp.stack([1.0 - p1, p1], axis=-1)


def item_log_prior(items: dict, priors: ItemPriors):
    """Log prior density of the unconstrained item values: independent normals, summed.

    Parameters
    ----------
    items : dict
        Unconstrained item blocks (``Structure.item_shapes``).
    priors : ItemPriors
        Means and standard deviations of the priors.

    Returns
    -------
    jax.Array
        A scalar.
    """
    total = 0.0
    for name, value in items.items():
        mean, sd = priors.of(name)
        total = total + jnp.sum(-0.5 * ((value - mean) / sd) ** 2 - math.log(sd) - 0.5 * math.log(2 * math.pi))
    return total


def ability_log_prior(theta):
    """log N(theta_i; 0, I) of each ability vector.

    Parameters
    ----------
    theta : array (..., K)
        Abilities.

    Returns
    -------
    jax.Array
        Shape (...).
    """
    return jnp.sum(-0.5 * theta**2 - 0.5 * math.log(2 * math.pi), axis=-1)


def initial_items(y, st: Structure, dtype=jnp.float32) -> dict:
    """Starting values from the data: difficulties / cuts from the observed proportions
    (logits of the marginal proportions), discriminations 1 (log 0).

    Parameters
    ----------
    y : array-like (N, J)
        Integer responses, -1 for missing.
    st : Structure
        The model's structure.
    dtype : dtype
        Type of the returned arrays.

    Returns
    -------
    dict
        Unconstrained item blocks: ``log_discrimination`` (J, K) zeros (not for the 1PL), and
        ``first_cut`` (J,) and ``log_gaps`` (J, C-2) for the GRM or ``difficulty`` (J,).
    """
    y = np.asarray(y)
    observed = y != MISSING
    n_obs = np.maximum(observed.sum(0), 1)
    out = {}
    if st.model != "1pl":
        out["log_discrimination"] = jnp.zeros((st.n_items, st.n_factors), dtype)
    if st.model == "grm":
        cmax = st.n_categories_max
        # P(Y >= c) per item, c = 1..C-1, clipped away from 0 and 1
        ge = np.stack([((y >= c) & observed).sum(0) / n_obs for c in range(1, cmax)], axis=1)
        ge = np.clip(ge, 0.02, 0.98)
        cuts = -np.log(ge / (1 - ge))  # P(Y >= c) = sigmoid(-cut) at theta = 0
        cuts = np.maximum.accumulate(cuts, axis=1)
        gaps = np.maximum(np.diff(cuts, axis=1), 0.05)
        out["first_cut"] = jnp.asarray(cuts[:, 0], dtype)
        out["log_gaps"] = jnp.asarray(np.log(gaps), dtype)
    else:
        p = np.clip(((y == 1) & observed).sum(0) / n_obs, 0.02, 0.98)
        out["difficulty"] = jnp.asarray(-np.log(p / (1 - p)), dtype)
    return out


def log_joint(params: dict, y, st: Structure, priors: ItemPriors):
    """log p(y, theta, d) on the unconstrained scale (the NUTS target): ``params`` holds
    ``ability`` (N, K) and the unconstrained item blocks. The priors are defined on the
    unconstrained values, so there is no Jacobian term.

    Parameters
    ----------
    params : dict
        ``ability`` (N, K) and the unconstrained item blocks.
    y : array (N, J)
        Integer responses, -1 for missing.
    st : Structure
        The model's structure.
    priors : ItemPriors
        Priors of the item values.

    Returns
    -------
    jax.Array
        A scalar.
    """
    items = {k: v for k, v in params.items() if k != "ability"}
    theta = params["ability"]
    return log_likelihood(params, y, st).sum() + ability_log_prior(theta).sum() + item_log_prior(items, priors)
