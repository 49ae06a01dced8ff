"""Simulated binary responses: 1PL and 2PL logistic, and the two-parameter normal ogive (2PNO).

All three use the slope-intercept form of seed 001, ``eta_pj = a_j * theta_p - d_j``:

    1pl   P(y = 1) = sigmoid(eta), a_j = 1 for every item (Rasch)
    2pl   P(y = 1) = sigmoid(eta)
    2pno  P(y = 1) = Phi(eta)   (Albert 1992; y = 1 exactly when Z = eta + N(0, 1) > 0)

True values (defaults): discrimination ``a_j ~ LogNormal(0, discrimination_sd = 0.3)`` (positive,
as seed 001's truncated-normal prior requires), or ``a_j ~ Uniform(discrimination_range)`` when a
range is given (seed 001's recovery design uses (0.5, 2)), difficulty ``d_j ~ N(0, difficulty_sd = 1)``,
ability ``theta_p ~ N(0, 1)``, or, with ``ability="mixture"``, a two-component Gaussian mixture
(weights ``mixture_weights``, means ``mixture_means``, common sd ``mixture_sd``) rescaled to mean
0 and variance 1 in the population so that the N(0, 1) prior of the fitted model keeps the scale.

Draws come from a seeded numpy Generator in float64, so one seed gives the same data everywhere.
Returns ``(ResponseMatrix, truth)`` with truth a tidy table: parameter (discrimination,
difficulty, ability), item, person, scale, category, value -- the layout of
``bayesirt.tables.factorized_grm_table``.

``simulate_gaussian_mixture`` draws the seed's other example, a two-component Gaussian mixture
``x ~ pi N(mu_1, 1/lambda) + (1 - pi) N(mu_0, 1/lambda)``, with its component labels.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit, ndtr

from bayesirt.io import Item, ResponseMatrix

MODELS = ("1pl", "2pl", "2pno")
ABILITIES = ("normal", "mixture")


def simulate_binary(
    seed: int,
    n_persons: int,
    n_items: int,
    model: str = "2pl",
    discrimination_sd: float = 0.3,
    difficulty_sd: float = 1.0,
    ability: str = "normal",
    mixture_weights=(0.5, 0.5),
    mixture_means=(-1.0, 1.0),
    mixture_sd: float = 0.5,
    item_prefix: str = "B",
    discrimination_range: tuple[float, float] | None = None,
) -> tuple[ResponseMatrix, pd.DataFrame]:
    """Binary responses from the 1PL, 2PL or 2PNO model, and the true parameters.

    See the module docstring for the true values' distributions.

    Parameters
    ----------
    seed : int
        Seed of the numpy generator.
    n_persons, n_items : int
        N and J.
    model : str
        ``"1pl"``, ``"2pl"`` or ``"2pno"``.
    discrimination_sd : float
        sd of log a_j (when no ``discrimination_range``).
    difficulty_sd : float
        sd of d_j.
    ability : str
        ``"normal"`` or ``"mixture"`` (rescaled to mean 0, variance 1).
    mixture_weights, mixture_means : tuple of float
        The ability mixture's weights and means.
    mixture_sd : float
        The mixture components' common sd.
    item_prefix : str
        Prefix of the item names.
    discrimination_range : tuple of float, optional
        a_j ~ Uniform(low, high) instead of the log-normal.

    Returns
    -------
    tuple of (ResponseMatrix, pandas.DataFrame)
        The responses and the true parameters (``truth_table``).

    Raises
    ------
    ValueError
        If the model or ability distribution is not known, or the range is not 0 < low <= high.
    """
    if model not in MODELS:
        raise ValueError(f"binary model '{model}' is not known; expected one of {list(MODELS)}")
    if ability not in ABILITIES:
        raise ValueError(f"ability distribution '{ability}' is not known; expected one of {list(ABILITIES)}")
    if n_persons < 1 or n_items < 1:
        raise ValueError(f"n_persons and n_items must be positive, got {n_persons} and {n_items}")
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), MODELS.index(model)]))
    if discrimination_range is not None and not 0 < discrimination_range[0] <= discrimination_range[1]:
        raise ValueError(f"discrimination_range {list(discrimination_range)} must be (low, high) with 0 < low <= high")
    if model == "1pl":
        a = np.ones(n_items)
    elif discrimination_range is not None:
        a = rng.uniform(*discrimination_range, size=n_items)
    else:
        a = np.exp(rng.normal(0.0, discrimination_sd, size=n_items))
    d = rng.normal(0.0, difficulty_sd, size=n_items)
    theta = _abilities(rng, n_persons, ability, mixture_weights, mixture_means, mixture_sd)
    eta = theta[:, None] * a[None, :] - d[None, :]
    p = ndtr(eta) if model == "2pno" else expit(eta)
    y = (rng.uniform(size=p.shape) < p).astype(np.int16)
    items = [Item(f"{item_prefix}{j + 1}", 2) for j in range(n_items)]
    attrs = {
        "source": "simulated",
        "model": model,
        "seed": int(seed),
        "parametrization": "eta = a * theta - d; P = sigmoid(eta) (1pl, 2pl) or Phi(eta) (2pno)",
        "ability": ability,
    }
    if ability == "mixture":
        attrs["mixture"] = {
            "weights": list(mixture_weights),
            "means": list(mixture_means),
            "sd": mixture_sd,
            "standardized": True,
        }
    return ResponseMatrix(y, items, attrs), truth_table(a, d, theta)


def _abilities(rng, n, ability, weights, means, sd):
    if ability == "normal":
        return rng.normal(size=n)
    w = np.asarray(weights, dtype=np.float64)
    m = np.asarray(means, dtype=np.float64)
    if w.shape != m.shape or w.ndim != 1 or np.any(w < 0) or not np.isclose(w.sum(), 1.0):
        raise ValueError(
            f"mixture weights {list(weights)} must be non-negative, sum to 1 and match the means {list(means)}"
        )
    comp = rng.choice(w.size, size=n, p=w)
    x = rng.normal(m[comp], sd)
    mean = float(w @ m)
    var = float(w @ (m - mean) ** 2) + sd**2
    return (x - mean) / np.sqrt(var)


def truth_table(a, d, theta) -> pd.DataFrame:
    """The true parameters as a tidy table: discriminations and difficulties per item, abilities per person.

    Parameters
    ----------
    a, d : array (J,)
        Discriminations and difficulties.
    theta : array (N,)
        Abilities.

    Returns
    -------
    pandas.DataFrame
        One row per parameter value.
    """
    n_items, n_persons = len(a), len(theta)
    items = np.arange(n_items)
    return pd.concat(
        [
            pd.DataFrame(
                {
                    "parameter": "discrimination",
                    "item": items,
                    "person": -1,
                    "scale": "all",
                    "category": -1,
                    "value": np.asarray(a, dtype=np.float64),
                }
            ),
            pd.DataFrame(
                {
                    "parameter": "difficulty",
                    "item": items,
                    "person": -1,
                    "scale": "all",
                    "category": -1,
                    "value": np.asarray(d, dtype=np.float64),
                }
            ),
            pd.DataFrame(
                {
                    "parameter": "ability",
                    "item": -1,
                    "person": np.arange(n_persons),
                    "scale": "all",
                    "category": -1,
                    "value": np.asarray(theta, dtype=np.float64),
                }
            ),
        ],
        ignore_index=True,
    )


def simulate_gaussian_mixture(
    seed: int, n: int, pi: float = 0.3, mu0: float = -2.0, mu1: float = 2.0, precision: float = 1.0
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Draws of a two-component Gaussian mixture, their labels and the truth.

    Parameters
    ----------
    seed : int
        Seed.
    n : int
        Observations (>= 1).
    pi : float
        Probability of the first component, in (0, 1).
    mu0, mu1 : float
        Component means.
    precision : float
        Components' precision (> 0).

    Returns
    -------
    tuple
        ``x`` (n,), component labels ``z`` (n,) (1 = first component, probability ``pi``) and
        the truth (dict).

    Raises
    ------
    ValueError
        If ``pi``, ``precision`` or ``n`` is out of range.
    """
    if not 0.0 < pi < 1.0 or precision <= 0 or n < 1:
        raise ValueError(f"need 0 < pi < 1, precision > 0, n >= 1; got pi={pi}, precision={precision}, n={n}")
    rng = np.random.default_rng(int(seed))
    z = (rng.uniform(size=n) < pi).astype(np.int8)
    x = rng.normal(np.where(z == 1, mu1, mu0), 1.0 / np.sqrt(precision))
    return x, z, {"pi": pi, "mu0": mu0, "mu1": mu1, "precision": precision, "seed": int(seed)}


def simulate_2pno_arrays(
    seed: int, n_persons: int, n_items: int, missing: float = 0.0, discrimination_range=(0.5, 2.0)
):
    """Seed 001's recovery design as plain arrays.

    a_j ~ U(0.5, 2), d_j ~ N(0, 1), theta_i ~ N(0, 1), 2PNO responses (int8), a ``missing``
    fraction of cells set to -1 (MCAR).

    Parameters
    ----------
    seed : int
        Seed.
    n_persons, n_items : int
        N and J.
    missing : float
        Fraction of cells set missing.
    discrimination_range : tuple of float
        Range of the uniform discriminations.

    Returns
    -------
    tuple of numpy.ndarray
        (y (N, J), a (J,), d (J,), theta (N,)).
    """
    rng = np.random.default_rng(seed)
    a = rng.uniform(*discrimination_range, n_items)
    d = rng.normal(0.0, 1.0, n_items)
    theta = rng.normal(0.0, 1.0, n_persons)
    y = (rng.uniform(size=(n_persons, n_items)) < ndtr(theta[:, None] * a - d)).astype(np.int8)
    if missing:
        y[rng.uniform(size=y.shape) < missing] = -1
    return y, a, d, theta
