"""Simulated item factor analysis data: the multidimensional GRM designs of seed 003 (section 4).

    loadings     lambda_jp = exp(N(0, 0.5))  (log-normal, variance 0.5 on the log scale) on the
                 factor(s) the item measures; zero elsewhere
    intercepts   per item, a draw from N(0, R_c) with R_c one LKJ-distributed correlation
                 matrix of size C-1, sorted into strictly increasing order; these are the
                 cuts of ``bayesirt.models.grm`` (P(x >= k) = sigmoid(lambda . z - cut_k)), and
                 the paper's intercepts are alpha_jk = -cut_jk (eq. 1)
    factors      z ~ N(0, Sigma) with Sigma an LKJ draw (normal design), or the three-component
                 mixture 0.4 N(-1.5 * 1, 0.5^2 Sigma) + 0.2 N(0, 0.5^2 Sigma) + 0.4 N(1.5 * 1,
                 0.5^2 Sigma) along (mu, ..., mu) (multimodal design)

Structures: ``simple`` (each item measures one factor, items split evenly and in order) and
``complex`` (additionally, each item cross-loads on one other randomly chosen factor with
probability ``cross_prob``, with a loading half the size of a log-normal draw).

The mixture latent has variance 0.25 + 0.8 * 1.5^2 = 2.05 per dimension. A model with a
standard-normal prior would then estimate loadings sqrt(2.05) times the generating ones, so
by default the mixture draws are divided by sqrt(2.05) (``standardize_mixture``); the truth
table then holds loadings on that unit-variance scale (the generating loadings times
sqrt(2.05)) and says so in the response matrix attrs. Set it to False for the raw design.

Everything is drawn with a seeded numpy Generator in float64, so a seed gives the same data on
every machine. Returns ``(ResponseMatrix, truth)`` with truth a tidy table (see
``bayesirt.tables.mgrm_table``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from bayesirt.data.grm_sampling import sample_grm
from bayesirt.data.mgrm_presets import PRESETS
from bayesirt.io import Item, ResponseMatrix
from bayesirt.tables import mgrm_table

MIXTURE_WEIGHTS = (0.4, 0.2, 0.4)
MIXTURE_MEANS = (-1.5, 0.0, 1.5)
MIXTURE_SD = 0.5

FACTOR_NAMES = {5: ["EXT", "EST", "AGR", "CSN", "OPN"]}


def lkj_corr(rng: np.random.Generator, dim: int, concentration: float = 1.0) -> np.ndarray:
    """One draw from the LKJ distribution over correlation matrices.

    Onion method, Lewandowski, Kurowicka and Joe 2009, section 3.2. Written here so simulated
    data depend only on numpy's generator.

    Parameters
    ----------
    rng : numpy.random.Generator
        Random numbers.
    dim : int
        Dimension.
    concentration : float
        LKJ concentration.

    Returns
    -------
    numpy.ndarray
        A correlation matrix, (dim, dim).
    """
    if dim == 1:
        return np.ones((1, 1))
    beta = concentration + (dim - 2) / 2.0
    r12 = 2.0 * rng.beta(beta, beta) - 1.0
    corr = np.array([[1.0, r12], [r12, 1.0]])
    for k in range(2, dim):
        beta -= 0.5
        y = rng.beta(k / 2.0, beta)
        w = rng.normal(size=k)
        w /= np.linalg.norm(w)
        q = np.linalg.cholesky(corr) @ (np.sqrt(y) * w)
        corr = np.block([[corr, q[:, None]], [q[None, :], np.ones((1, 1))]])
    return corr


def simulate_mgrm(
    seed: int,
    n_persons: int,
    n_items: int,
    n_categories: int,
    n_factors: int,
    structure: str = "simple",
    latent: str = "normal",
    loading_log_var: float = 0.5,
    lkj_concentration: float = 1.0,
    cross_prob: float = 0.5,
    standardize_mixture: bool = True,
    factor_names: list[str] | None = None,
    include_abilities: bool = True,
    parameter_seed: int | None = None,
) -> tuple[ResponseMatrix, pd.DataFrame]:
    """Responses from the multidimensional GRM and the true parameters as a tidy table.

    With ``parameter_seed`` the item parameters and the factor correlations are drawn from
    their own generator, so replications that differ only in ``seed`` share one set of true
    parameters and differ in the persons and their responses (the paper's design: one truth,
    100 response matrices). Without it everything comes from ``seed``.

    Parameters
    ----------
    seed : int
        Seed of the numpy generator.
    n_persons, n_items : int
        N and I.
    n_categories : int
        Categories of every item (at least 2).
    n_factors : int
        P.
    structure : str
        ``"simple"`` or ``"complex"`` (see the module docstring).
    latent : str
        ``"normal"`` or ``"mixture"`` (the multimodal design).
    loading_log_var : float
        Variance of the log loadings.
    lkj_concentration : float
        Concentration of the LKJ draw of the factor correlations.
    cross_prob : float
        Probability of a cross-loading (complex structure).
    standardize_mixture : bool
        Divide the mixture draws by sqrt(2.05) (see the module docstring).
    factor_names : list of str, optional
        Names of the factors.
    include_abilities : bool
        Whether the truth table holds the abilities.
    parameter_seed : int, optional
        Separate seed of the item parameters and factor correlations.

    Returns
    -------
    tuple of (ResponseMatrix, pandas.DataFrame)
        The responses (Q-matrix in ``attrs``) and the truth table.

    Raises
    ------
    ValueError
        If ``n_persons`` is not positive, ``n_categories`` is below 2, ``n_factors`` is outside
        1..I, or ``structure`` or ``latent`` is not known.
    """
    if n_persons < 1:
        raise ValueError(f"n_persons must be positive, got {n_persons}")
    if n_categories < 2:
        raise ValueError(f"n_categories must be at least 2, got {n_categories}")
    if not 1 <= n_factors <= n_items:
        raise ValueError(f"n_factors must be in 1..n_items={n_items}, got {n_factors}")
    if structure not in ("simple", "complex"):
        raise ValueError(f"structure must be 'simple' or 'complex', got '{structure}'")
    if latent not in ("normal", "mixture"):
        raise ValueError(f"latent must be 'normal' or 'mixture', got '{latent}'")
    rng = np.random.default_rng(seed)
    prng = rng if parameter_seed is None else np.random.default_rng(parameter_seed)  # item parameters
    factor_names = factor_names or FACTOR_NAMES.get(n_factors) or [f"F{p + 1}" for p in range(n_factors)]

    # items split evenly, in order, over the factors (10 per factor for the IPIP shape)
    main_factor = (np.arange(n_items) * n_factors) // n_items
    lam = np.zeros((n_items, n_factors))
    lam[np.arange(n_items), main_factor] = np.exp(prng.normal(0.0, np.sqrt(loading_log_var), n_items))
    if structure == "complex" and n_factors > 1:
        cross = prng.uniform(size=n_items) < cross_prob
        other = (main_factor + prng.integers(1, n_factors, n_items)) % n_factors
        size = 0.5 * np.exp(prng.normal(0.0, np.sqrt(loading_log_var), n_items))
        lam[np.arange(n_items)[cross], other[cross]] = size[cross]

    cut_corr = lkj_corr(prng, n_categories - 1, lkj_concentration)
    raw = prng.multivariate_normal(np.zeros(n_categories - 1), cut_corr, size=n_items)
    cuts = np.sort(raw, axis=1)

    sigma = lkj_corr(prng, n_factors, lkj_concentration)
    chol = np.linalg.cholesky(sigma)
    eps = rng.normal(size=(n_persons, n_factors))
    scale = 1.0
    if latent == "normal":
        z = eps @ chol.T
    else:
        comp = rng.choice(3, size=n_persons, p=MIXTURE_WEIGHTS)
        z = np.asarray(MIXTURE_MEANS)[comp][:, None] + MIXTURE_SD * (eps @ chol.T)
        if standardize_mixture:
            w, m = np.asarray(MIXTURE_WEIGHTS), np.asarray(MIXTURE_MEANS)
            scale = float(np.sqrt(MIXTURE_SD**2 + np.sum(w * m**2)))
            z = z / scale
    lam_true = lam * scale  # loadings on the scale of the returned latent draws

    score = z @ lam_true.T  # (N, I)
    responses = sample_grm(rng, score, cuts, dtype=np.int8)

    def item_name(j):
        f = factor_names[main_factor[j]]
        k = j - np.flatnonzero(main_factor == main_factor[j])[0] + 1
        return f"{f}_{k}" if f[-1].isdigit() else f"{f}{k}"  # EXT1 (IPIP style), F1_1

    items = [Item(item_name(j), n_categories, factor_names[main_factor[j]]) for j in range(n_items)]
    attrs = {
        "source": "simulated",
        "model": "mgrm",
        "seed": seed,
        "parameter_seed": parameter_seed,
        "structure": structure,
        "latent": latent,
        "n_factors": n_factors,
        "loading_log_var": loading_log_var,
        "lkj_concentration": lkj_concentration,
        "latent_scale_divisor": scale,
        "standardize_mixture": standardize_mixture,
        "q_matrix": (lam != 0).astype(int).tolist(),
        "factor_names": factor_names,
    }
    rm = ResponseMatrix(responses, items, attrs)
    truth = mgrm_table(
        {
            "loading": lam_true,
            "intercept": -cuts,
            "factor_corr": sigma,
            **({"ability": z} if include_abilities else {}),
        },
        item_names=[it.name for it in items],
        factor_names=factor_names,
    )
    return rm, truth


def from_preset(preset: str, seed: int, n_persons: int, **overrides):
    """``simulate_mgrm`` with a design of ``PRESETS`` by name.

    Parameters
    ----------
    preset : str
        A name in ``PRESETS`` (``data.mgrm_presets``).
    seed : int
        Seed.
    n_persons : int
        N.
    **overrides
        Replace the preset's arguments.

    Returns
    -------
    tuple of (ResponseMatrix, pandas.DataFrame)
        As ``simulate_mgrm``.

    Raises
    ------
    ValueError
        If the preset is not known.
    """
    if preset not in PRESETS:
        raise ValueError(f"unknown simulation preset '{preset}'; known: {sorted(PRESETS)}")
    return simulate_mgrm(seed, n_persons, **{**PRESETS[preset], **overrides})


def q_matrix(rm: ResponseMatrix) -> np.ndarray:
    """The Q-matrix stored by ``simulate_mgrm`` (or the simple structure of the item scales).

    Parameters
    ----------
    rm : ResponseMatrix
        A response matrix.

    Returns
    -------
    numpy.ndarray
        Q-matrix (I, P), float32.
    """
    if "q_matrix" in rm.attrs:
        return np.asarray(rm.attrs["q_matrix"], np.float32)
    idx = rm.scale_index
    q = np.zeros((rm.n_items, len(rm.scales)), np.float32)
    q[np.arange(rm.n_items), idx] = 1.0
    return q
