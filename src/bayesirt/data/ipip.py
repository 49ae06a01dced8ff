"""IPIP-FFM (Big-Five Factor Markers) data from Open Psychometrics, screened as in Urban & Bauer (2021).

Source: ``https://openpsychometrics.org/_rawdata/IPIP-FFM-data-8Nov2018.zip`` ->
``IPIP-FFM-data-8Nov2018/data-final.csv``: tab-separated, about 1,015,341 rows and 110 columns --
50 items EXT1..10, EST1..10, AGR1..10, CSN1..10, OPN1..10 coded 1..5 (0 = no answer), 50 timing
columns ``<item>_E`` (ms), dateload, screenw, screenh, introelapse, testelapse (s), endelapse,
IPC (number of records from the same IP address), country, lat_appx_lots_of_err,
long_appx_lots_of_err; the string ``NULL`` marks empty cells.

Preprocessing (every step switchable, see ``Preprocess``; a row count is kept after each):
 1. read      rows with the wrong number of fields stop with the line number
              (``bad_lines="skip"`` drops and counts them instead)
 2. IPC == 1  drop records that share an IP address with others (an IPC of NULL is not 1)
 3. 0 -> missing (and NULL); drop persons without any response
 4. careless responders: four risk flags, each 0 (none), 1 (low) or 2 (high risk)
    - test time       testelapse < 150 s -> 2; > 3600 s -> 1 (NULL: no flag)
    - long string     a run of >= 10 identical consecutive answers (file order of the 50
                      items, raw codes): of 1 or 5 -> 2; of 2 or 4 -> 1
    - Mahalanobis     p-value of the squared distance (chi-square, df = observed items)
                      p < .05 -> 2; .05 < p < .10 -> 1. Mean and covariance from the complete
                      rows; persons with missing items use the observed sub-vector.
    - Guttman errors  polytomous Guttman errors G_p summed over the five factors, on the
                      re-oriented responses (item steps X >= 2..5 ordered by popularity within
                      each factor; missing steps count as 0). Cut-offs: medians over bootstrap
                      resamples of the 95% and 90% quantiles of G_p in data simulated from a
                      unidimensional GRM per factor: G_p > cut95 -> 2; > cut90 -> 1.
    A person is dropped when the flags sum to 4 or more, or when three or more flags are
    raised (two high; one high and two low; three low; ...).
 5. optional held-out split of persons (``split_holdout``, default 2.5%, seeded).

The GRM behind the Guttman cut-offs. Urban & Bauer fit each factor's GRM by marginal maximum
likelihood (R ``ltm``), score EAP abilities, and simulate as many persons as the data hold by
resampling those abilities. Here, to keep a million-row file within minutes, the GRMs of the five
factors are fitted by marginal maximum likelihood (Gauss-Hermite quadrature, L-BFGS) on a random
subsample of ``guttman_fit_persons`` persons with the project's GRM likelihood
(``bayesirt.models.grm``), and ``guttman_simulated_persons`` persons are simulated by
resampling their EAP abilities independently per factor. Same idea, smaller sizes; the
figures in ``attrs["screening"]`` record the sizes and cut-offs used.

Re-orientation. By default (``reorient=True``, as Urban & Bauer did before fitting) the
reverse-keyed items EXT2,4,6,8,10, EST2,4, AGR1,3,5,7, CSN2,4,6,8, OPN2,4,6 are mapped
k -> 4 - k so that every item loads positively on its factor; ``attrs["reoriented"]`` records it.
Categories are 0..4 (raw code - 1), missing -1.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt.data import _raw
from bayesirt.io import MISSING, DataFormatError, Item, ResponseMatrix

log = logging.getLogger("bayesirt")

FACTORS = ("EXT", "EST", "AGR", "CSN", "OPN")
ITEMS = [f"{f}{i}" for f in FACTORS for i in range(1, 11)]
TIME_COLUMNS = [f"{it}_E" for it in ITEMS]
META_COLUMNS = ["dateload", "screenw", "screenh", "introelapse", "testelapse", "endelapse", "IPC",
                "country", "lat_appx_lots_of_err", "long_appx_lots_of_err"]
COLUMNS = ITEMS + TIME_COLUMNS + META_COLUMNS
REVERSE_KEYED = frozenset({"EXT2", "EXT4", "EXT6", "EXT8", "EXT10", "EST2", "EST4", "AGR1", "AGR3",
                           "AGR5", "AGR7", "CSN2", "CSN4", "CSN6", "CSN8", "OPN2", "OPN4", "OPN6"})
N_CATEGORIES = 5
FLAGS = ("test_time", "long_string", "mahalanobis", "guttman")


@dataclass(frozen=True)
class Preprocess:
    """Preprocessing options (config keys of the same names)."""

    keep_single_ip: bool = True          # keep IPC == 1 only
    drop_empty_persons: bool = True      # drop persons with no response
    screen_careless: bool = True         # master switch of the four flags
    flag_test_time: bool = True
    flag_long_string: bool = True
    flag_mahalanobis: bool = True
    flag_guttman: bool = True
    test_time_min: float = 150.0
    test_time_max: float = 3600.0
    long_string_length: int = 10
    mahalanobis_p_high: float = 0.05
    mahalanobis_p_low: float = 0.10
    guttman_quantile_high: float = 0.95
    guttman_quantile_low: float = 0.90
    guttman_fit_persons: int = 20_000
    guttman_fit_iterations: int = 50
    guttman_simulated_persons: int = 100_000
    guttman_bootstrap: int = 200
    seed: int = 0
    reorient: bool = True
    bad_lines: str = "error"             # "error" or "skip"
    require_all_categories: bool = True

    def __post_init__(self):
        if self.bad_lines not in ("error", "skip"):
            raise ValueError(f"preprocessing option bad_lines={self.bad_lines!r}; expected 'error' or 'skip'")


def options(**kwargs) -> Preprocess:
    known = {f.name for f in dataclasses.fields(Preprocess)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise ValueError(f"unknown IPIP preprocessing option(s) {unknown}; known: {sorted(known)}")
    return Preprocess(**kwargs)


def items() -> list[Item]:
    return [Item(it, N_CATEGORIES, it[:3], it in REVERSE_KEYED) for it in ITEMS]


# --------------------------------------------------------------------------------------- reading

def read_raw(path, bad_lines: str = "error") -> tuple[dict, int]:
    """Parse the columns the preprocessing needs: ``{"items": (N, 50) int16 raw codes 0..5 with
    -1 for NULL, "testelapse": (N,) float, "IPC": (N,) float}`` and the number of skipped lines."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    path = _raw.require_file(path)
    with open(path, "rb") as fh:
        header = fh.readline().decode("utf-8", errors="replace").rstrip("\r\n").split("\t")
    needed = ITEMS + ["testelapse", "IPC"]
    _raw.require_columns(path, header, needed)
    bad: list = []

    def on_invalid(row):
        bad.append((row.number, row.actual_columns, row.expected_columns, row.text))
        return "skip"

    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(block_size=1 << 24),
            parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False, invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(
                include_columns=needed, column_types={c: pa.float64() for c in needed},
                null_values=["NULL", ""], strings_can_be_null=True))
    except pa.ArrowInvalid as err:
        raise _conversion_error(path, header, str(err)) from None
    if bad and bad_lines == "error":
        number, actual, expected = _first_bad_line(path, len(header))
        raise DataFormatError(f"{path}: line {number} has {actual} fields, the header has {expected} "
                              f"({len(bad)} such line(s); set bad_lines: skip to drop them)")
    if table.num_rows == 0:
        raise DataFormatError(f"{path}: header only, no persons")
    if bad:
        log.warning("%s: skipped %d line(s) with the wrong number of fields", path, len(bad))
    codes = np.empty((table.num_rows, len(ITEMS)), dtype=np.int16)
    for j, name in enumerate(ITEMS):
        values = table.column(name).to_numpy(zero_copy_only=False)
        codes[:, j] = _raw.integer_codes(values, path, name, 0, 5, allow_null=True)
    out = {"items": codes,
           "testelapse": table.column("testelapse").to_numpy(zero_copy_only=False).astype(np.float64),
           "IPC": table.column("IPC").to_numpy(zero_copy_only=False).astype(np.float64)}
    return out, len(bad)


def _conversion_error(path, header, message: str) -> DataFormatError:
    m = re.search(r"column #(\d+):(?: Row #(\d+):)? .*invalid value '([^']*)'", message)
    if m:
        col, value = int(m.group(1)), m.group(3)
        name = header[col] if col < len(header) else f"#{col}"
        # with parallel parsing pyarrow does not know the row: find the first such cell
        line = int(m.group(2)) if m.group(2) else _find_cell(path, col, value)
        return DataFormatError(f"{path}: line {line}, column '{name}': non-numeric cell {value!r}")
    return DataFormatError(f"{path}: not readable as the IPIP-FFM tab-separated format ({message.splitlines()[0]})")


def _find_cell(path, col: int, value: str) -> int:
    target = value.encode()
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            cells = line.rstrip(b"\r\n").split(b"\t")
            if number > 1 and col < len(cells) and cells[col] == target:
                return number
    return -1


def _first_bad_line(path, n_fields) -> tuple[int, int, int]:
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, start=1):
            k = line.rstrip(b"\r\n").count(b"\t") + 1
            if number > 1 and k != n_fields and line.strip():
                return number, k, n_fields
    return -1, -1, n_fields


# --------------------------------------------------------------------------------- preprocessing

def load(path, **preprocess_options) -> tuple[ResponseMatrix, pd.DataFrame]:
    """Read and preprocess the raw file; return the response matrix and the row-count table.

    The table has one row per step: ``step``, ``persons`` (after the step), ``removed``.
    """
    opt = options(**preprocess_options)
    t0 = time.perf_counter()
    raw, n_skipped = read_raw(path, opt.bad_lines)
    log.info("%s: read %d rows in %.1f s", Path(path).name, raw["items"].shape[0], time.perf_counter() - t0)
    rm, counts, _ = preprocess(raw, opt, where=path, n_skipped=n_skipped)
    rm.attrs["file"] = Path(path).name
    log.info("%s: %d persons after preprocessing (%.1f s)", Path(path).name, rm.n_persons,
             time.perf_counter() - t0)
    return rm, counts


def preprocess(raw: dict, opt: Preprocess, where="IPIP-FFM data", n_skipped: int = 0):
    """Steps 2-4 on parsed columns (see ``read_raw``); returns the matrix, the row-count table
    and the indices of the kept rows among the parsed ones."""
    codes, testelapse = raw["items"].copy(), np.asarray(raw["testelapse"], np.float64)
    rows = np.arange(codes.shape[0])
    steps = [("read", codes.shape[0], n_skipped)]

    def keep(mask, step):
        nonlocal codes, testelapse, rows
        codes, testelapse, rows = codes[mask], testelapse[mask], rows[mask]
        steps.append((step, int(mask.sum()), int((~mask).sum())))

    if opt.keep_single_ip:
        keep(np.asarray(raw["IPC"]) == 1, "IPC == 1")
    codes[codes == 0] = MISSING  # 0 = no answer; NULL is already -1
    if opt.drop_empty_persons:
        keep((codes != MISSING).any(1), "drop persons without response")
    screening: dict = {"enabled": bool(opt.screen_careless)}
    if opt.screen_careless:
        if codes.shape[0] == 0:
            raise DataFormatError(f"{where}: no persons left to screen")
        flags, screening = careless_flags(codes, testelapse, opt)
        keep(~drop_rule(flags), "careless-responder screen")

    y = np.where(codes == MISSING, MISSING, codes - 1).astype(np.int16)
    if opt.reorient:
        y = reorient(y)
    counts = pd.DataFrame(steps, columns=["step", "persons", "removed"])
    attrs = {"source": "ipip_ffm", "reoriented": bool(opt.reorient),
             "preprocess": dataclasses.asdict(opt), "row_counts": counts.to_dict(orient="records"),
             "screening": screening, "n_missing_cells": int((y == MISSING).sum())}
    rm = ResponseMatrix(y, items(), attrs)
    _raw.check_nonempty(rm, where)
    if opt.require_all_categories:
        _raw.check_categories(rm, where)
    return rm, counts, rows


def reorient(y: np.ndarray) -> np.ndarray:
    """Map reverse-keyed items' categories k -> 4 - k (missing stays -1)."""
    rev = np.array([it in REVERSE_KEYED for it in ITEMS])
    out = y.copy()
    out[:, rev] = np.where(y[:, rev] == MISSING, MISSING, N_CATEGORIES - 1 - y[:, rev])
    return out


def drop_rule(flags: np.ndarray) -> np.ndarray:
    """Urban & Bauer's combination: risk levels sum to >= 4, or >= 3 flags raised."""
    return (flags.sum(1) >= 4) | ((flags > 0).sum(1) >= 3)


def careless_flags(codes: np.ndarray, testelapse: np.ndarray, opt: Preprocess) -> tuple[np.ndarray, dict]:
    """(N, 4) risk levels 0/1/2 in the order of ``FLAGS`` (0 where a flag is switched off).

    ``codes``: raw codes 1..5, missing -1, items in file order.
    """
    n = codes.shape[0]
    flags = np.zeros((n, len(FLAGS)), dtype=np.int8)
    info: dict = {"enabled": True}
    if opt.flag_test_time:
        flags[:, 0] = test_time_flag(testelapse, opt.test_time_min, opt.test_time_max)
    if opt.flag_long_string:
        flags[:, 1] = long_string_flag(codes, opt.long_string_length)
    if opt.flag_mahalanobis:
        p = mahalanobis_pvalues(np.where(codes == MISSING, np.nan, codes.astype(np.float64)))
        flags[:, 2] = np.where(p < opt.mahalanobis_p_high, 2,
                               np.where((p > opt.mahalanobis_p_high) & (p < opt.mahalanobis_p_low), 1, 0))
    if opt.flag_guttman:
        oriented = reorient(np.where(codes == MISSING, MISSING, codes - 1))
        gp = guttman_errors(oriented)
        cut_high, cut_low, g_info = guttman_cutoffs(oriented, opt)
        flags[:, 3] = np.where(gp > cut_high, 2, np.where(gp > cut_low, 1, 0))
        info["guttman"] = g_info
    for k, name in enumerate(FLAGS):
        info[name] = {**info.get(name, {}), "switched_on": bool(getattr(opt, f"flag_{name}")),
                      "low": int((flags[:, k] == 1).sum()), "high": int((flags[:, k] == 2).sum())}
    info["dropped"] = int(drop_rule(flags).sum())
    return flags, info


def test_time_flag(testelapse, t_min=150.0, t_max=3600.0) -> np.ndarray:
    t = np.asarray(testelapse, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return np.where(t < t_min, 2, np.where(t > t_max, 1, 0)).astype(np.int8)  # NaN -> 0


def long_string_flag(codes: np.ndarray, length: int = 10) -> np.ndarray:
    """2 for a run of >= ``length`` identical answers 1 or 5, 1 for 2 or 4 (missing breaks runs)."""
    n, m = codes.shape
    run = np.ones(n, dtype=np.int16)
    high = np.zeros(n, dtype=bool)
    low = np.zeros(n, dtype=bool)
    prev = codes[:, 0]
    for j in range(m):
        cur = codes[:, j]
        if j > 0:
            run = np.where((cur == prev) & (cur != MISSING), run + 1, 1).astype(np.int16)
        long = run >= length
        high |= long & ((cur == 1) | (cur == 5))
        low |= long & ((cur == 2) | (cur == 4))
        prev = cur
    return np.where(high, 2, np.where(low, 1, 0)).astype(np.int8)


def mahalanobis_pvalues(x: np.ndarray, chunk: int = 200_000) -> np.ndarray:
    """Chi-square p-values of squared Mahalanobis distances; NaN = missing (df = observed items)."""
    from scipy import linalg, stats

    obs = ~np.isnan(x)
    complete = obs.all(1)
    n_items = x.shape[1]
    if complete.sum() > 2 * n_items:
        mu = x[complete].mean(0)
        cov = np.cov(x[complete], rowvar=False)
    else:  # too few complete rows: pairwise-complete estimates
        mu = np.nanmean(x, 0)
        cov = pd.DataFrame(x).cov().to_numpy()
    cov = _positive_definite(cov)
    chol = linalg.cholesky(cov, lower=True)
    d2 = np.full(x.shape[0], np.nan)
    rows = np.flatnonzero(complete)
    for start in range(0, rows.size, chunk):
        r = rows[start:start + chunk]
        z = linalg.solve_triangular(chol, (x[r] - mu).T, lower=True)
        d2[r] = np.einsum("ij,ij->j", z, z)
    partial = np.flatnonzero(~complete & obs.any(1))
    if partial.size:
        patterns, inverse = np.unique(np.packbits(obs[partial], axis=1), axis=0, return_inverse=True)
        inverse = inverse.ravel()
        for k in range(patterns.shape[0]):
            r = partial[inverse == k]
            o = obs[r[0]]
            sub = linalg.cholesky(cov[np.ix_(o, o)], lower=True)
            z = linalg.solve_triangular(sub, (x[np.ix_(r, o)] - mu[o]).T, lower=True)
            d2[r] = np.einsum("ij,ij->j", z, z)
    return stats.chi2.sf(d2, df=obs.sum(1))


def _positive_definite(cov: np.ndarray) -> np.ndarray:
    """Add a small ridge when the covariance is (numerically) singular, e.g. tiny samples."""
    w = np.linalg.eigvalsh(cov)
    if w[0] > 1e-8 * max(w[-1], 1e-12):
        return cov
    ridge = 1e-3 * max(np.trace(cov) / cov.shape[0], 1e-6)
    log.warning("Mahalanobis: covariance is singular; adding a ridge of %.3g", ridge)
    return cov + ridge * np.eye(cov.shape[0])


def guttman_errors(y: np.ndarray, n_categories: int = N_CATEGORIES) -> np.ndarray:
    """Polytomous Guttman errors summed over the factors (items in blocks of 10, in order).

    ``y``: oriented categories 0..K-1, missing -1. Within a factor the item steps X >= 1..K-1
    are ordered by popularity (proportion passing, missing = not passing), most popular first;
    a person's count is the number of (passed, failed) pairs where the failed step is the more
    popular one: sum_k x_k * (number of failed steps before k).
    """
    n = y.shape[0]
    total = np.zeros(n, dtype=np.int32)
    per = len(ITEMS) // len(FACTORS) if y.shape[1] == len(ITEMS) else y.shape[1]
    for start in range(0, y.shape[1], per):
        block = y[:, start:start + per]
        steps = (block[:, :, None] >= np.arange(1, n_categories)[None, None, :]).reshape(n, -1)
        popularity = steps.mean(0)
        # R's rev(order(p)): descending popularity, ties in reverse column order
        order = np.argsort(popularity, kind="stable")[::-1]
        x = steps[:, order]
        failed_before = np.cumsum(~x, axis=1, dtype=np.int16)
        total += (x * failed_before).sum(1, dtype=np.int32)
    return total


def guttman_cutoffs(y: np.ndarray, opt: Preprocess) -> tuple[float, float, dict]:
    """Bootstrap cut-offs of the Guttman statistic under a GRM fitted to ``y`` (oriented)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(np.random.SeedSequence([int(opt.seed), 7]))
    n = y.shape[0]
    fit_rows = rng.choice(n, size=min(n, opt.guttman_fit_persons), replace=False)
    fit_rows.sort()
    factor = np.repeat(np.arange(y.shape[1] // 10 if y.shape[1] == len(ITEMS) else 1),
                       10 if y.shape[1] == len(ITEMS) else y.shape[1])
    a, cuts, theta, nll = fit_grm_mml(y[fit_rows], factor, iterations=opt.guttman_fit_iterations)
    n_sim = opt.guttman_simulated_persons
    theta_sim = np.stack([rng.choice(theta[:, f], size=n_sim, replace=True)
                          for f in range(theta.shape[1])], axis=1)
    y_sim = sample_grm(rng, theta_sim[:, factor] * a[None, :], cuts)
    g_sim = guttman_errors(y_sim).astype(np.float64)
    q_high, q_low = [], []
    for _ in range(opt.guttman_bootstrap):
        b = g_sim[rng.integers(0, n_sim, size=n_sim)]
        hi, lo = np.quantile(b, [opt.guttman_quantile_high, opt.guttman_quantile_low])
        q_high.append(hi)
        q_low.append(lo)
    cut_high, cut_low = float(np.median(q_high)), float(np.median(q_low))
    info = {"cutoff_high": cut_high, "cutoff_low": cut_low, "fit_persons": int(fit_rows.size),
            "fit_iterations": opt.guttman_fit_iterations, "fit_mean_nll": nll, "simulated_persons": n_sim,
            "bootstrap": opt.guttman_bootstrap, "discrimination_mean": float(a.mean()),
            "seconds": time.perf_counter() - t0}
    return cut_high, cut_low, info


def fit_grm_mml(y: np.ndarray, factor: np.ndarray, iterations: int = 100, n_nodes: int = 21):
    """Marginal maximum likelihood fit of independent unidimensional GRMs, one per factor.

    Abilities ~ N(0, 1) are integrated out by Gauss-Hermite quadrature (``n_nodes`` nodes), as
    R ``ltm::grm`` does. The category log-probabilities on the quadrature grid come from the
    project's GRM likelihood (``grm.category_log_probs``); a person's log-likelihood at every
    node is then one matrix product of the one-hot responses with that grid. L-BFGS (optax)
    runs ``iterations`` steps inside one jitted ``lax.scan``. Returns discriminations (I,),
    cuts (I, K-1), EAP abilities (N, F) and the final mean negative log-likelihood.
    """
    import jax.numpy as jnp

    n, n_items = y.shape
    n_factors = int(factor.max()) + 1
    obs = y != MISSING
    nodes, weights = np.polynomial.hermite_e.hermegauss(n_nodes)
    log_w = np.log(weights / weights.sum())
    onehot = (y[:, :, None] == np.arange(N_CATEGORIES)[None, None, :]) & obs[:, :, None]
    onehot = jnp.asarray(onehot.reshape(n, n_items * N_CATEGORIES), jnp.float32)
    # (I*K, F): which factor each (item, category) column belongs to
    member = jnp.asarray(np.repeat(np.eye(n_factors)[factor], N_CATEGORIES, axis=0), jnp.float32)
    nodes_j = jnp.asarray(nodes, jnp.float32)
    log_w_j = jnp.asarray(log_w, jnp.float32)

    p_ge = np.stack([((y >= k) & obs).sum(0) / np.maximum(obs.sum(0), 1) for k in range(1, N_CATEGORIES)], 1)
    p_ge = np.clip(p_ge, 1e-3, 1 - 1e-3)
    cut0 = np.maximum.accumulate(-np.log(p_ge / (1 - p_ge)) * 1.4, axis=1)
    inc0 = np.maximum(np.diff(cut0, axis=1), 0.05)
    params = {"log_a": jnp.zeros(n_items, jnp.float32),
              "base": jnp.asarray(cut0[:, 0], jnp.float32),
              "inc_raw": jnp.asarray(np.log(np.expm1(inc0)), jnp.float32)}

    p, values, eap = _mml_run(params, onehot, member, nodes_j, log_w_j, iterations)
    a, cuts = _mml_unpack(p)
    return (np.asarray(a, np.float64), np.asarray(cuts, np.float64), np.asarray(eap, np.float64),
            float(values[-1]))


def _mml_unpack(p):
    import jax
    import jax.numpy as jnp

    from bayesirt.models import grm

    return jnp.exp(p["log_a"]), grm.ordered_cuts(p["base"], jax.nn.softplus(p["inc_raw"]))


def _mml_node_loglik(p, onehot, member, nodes, n_categories):
    """(N, F, Q): per person and factor, the log-likelihood of its items at every node."""
    import jax.numpy as jnp

    from bayesirt.models import grm

    a, cuts = _mml_unpack(p)
    n_items = a.shape[0]
    ncat = jnp.full(n_items, n_categories, jnp.int32)
    lp = grm.category_log_probs(nodes[:, None] * a[None, :], cuts, ncat)  # (Q, I, K)
    grid = lp.reshape(nodes.shape[0], n_items * n_categories).T  # (I*K, Q)
    return jnp.einsum("nc,cf,cq->nfq", onehot, member, grid)


def _mml_run_impl(params, onehot, member, nodes, log_w, iterations):
    import jax
    import optax

    n = onehot.shape[0]

    def loss(p):
        ll = jax.nn.logsumexp(_mml_node_loglik(p, onehot, member, nodes, N_CATEGORIES) + log_w, axis=-1)
        return -ll.sum() / n

    opt = optax.lbfgs()
    value_and_grad = optax.value_and_grad_from_state(loss)

    def step(carry, _):
        p, s = carry
        value, g = value_and_grad(p, state=s)
        u, s = opt.update(g, s, p, value=value, grad=g, value_fn=loss)
        return (optax.apply_updates(p, u), s), value

    (p, _), values = jax.lax.scan(step, (params, opt.init(params)), None, length=iterations)
    post = jax.nn.softmax(_mml_node_loglik(p, onehot, member, nodes, N_CATEGORIES) + log_w, axis=-1)
    return p, values, post @ nodes


def _mml_run(*args):
    # one jitted function at module level, so equal shapes reuse the compiled program
    global _MML_JIT
    if _MML_JIT is None:
        import jax

        _MML_JIT = jax.jit(_mml_run_impl, static_argnames=("iterations",))
    return _MML_JIT(*args[:-1], iterations=args[-1])


_MML_JIT = None


def sample_grm(rng, score: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Inverse-CDF GRM draws in numpy: P(Y >= k) = sigmoid(score - cut_k), decreasing in k."""
    from scipy.special import expit

    u = rng.uniform(size=score.shape)
    out = np.zeros(score.shape, dtype=np.int16)
    for k in range(cuts.shape[1]):
        out += (u < expit(score - cuts[None, :, k])).astype(np.int16)
    return out


# --------------------------------------------------------------------------------- holdout split

def holdout_mask(n_persons: int, fraction: float = 0.025, seed: int = 0) -> np.ndarray:
    """Boolean mask of held-out persons: ``round(fraction * n)`` of them, chosen by ``seed``."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"holdout fraction {fraction} is outside [0, 1)")
    n_hold = int(round(fraction * n_persons))
    if fraction > 0 and n_hold == 0 and n_persons > 1:
        n_hold = 1
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 11]))
    mask = np.zeros(n_persons, dtype=bool)
    mask[rng.choice(n_persons, size=n_hold, replace=False)] = True
    return mask


def split_holdout(rm: ResponseMatrix, fraction: float = 0.025, seed: int = 0) -> tuple[ResponseMatrix, ResponseMatrix]:
    """(training, held-out) response matrices; persons keep their order within each part."""
    mask = holdout_mask(rm.n_persons, fraction, seed)
    info = {"fraction": float(fraction), "seed": int(seed), "n_holdout": int(mask.sum()),
            "n_train": int((~mask).sum())}
    train = ResponseMatrix(rm.responses[~mask], list(rm.items), {**rm.attrs, "split": {"part": "train", **info}})
    hold = ResponseMatrix(rm.responses[mask], list(rm.items), {**rm.attrs, "split": {"part": "holdout", **info}})
    return train, hold


# ------------------------------------------------------------------ synthetic files, same format

def write_synthetic_raw(path, n_persons: int, seed: int = 0, careless_fraction: float = 0.05,
                        multi_ip_fraction: float = 0.3, null_rows: int = 0, zero_fraction: float = 0.002) -> dict:
    """Write a file in the exact raw format of ``data-final.csv`` (for tests and benchmarks).

    Responses come from a five-factor GRM (10 items per factor, reverse-keyed items reversed);
    a ``careless_fraction`` of persons answer uniformly at random within 40-140 s or give one
    long string; ``multi_ip_fraction`` of persons get IPC > 1; ``null_rows`` rows are NULL in
    every item and timing column; ``zero_fraction`` of item cells are 0 (no answer).
    Returns the planted truth (careless row indices, IPC, ...).
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    from bayesirt.io import atomic_path

    rng = np.random.default_rng(seed)
    n = n_persons
    factor = np.repeat(np.arange(5), 10)
    a = np.exp(rng.normal(0.3, 0.25, size=50))
    cuts = np.sort(rng.normal(0, 1.2, size=(50, 4)), axis=1) + np.linspace(-0.6, 0.6, 4)
    theta = rng.normal(size=(n, 5))
    y = sample_grm(rng, theta[:, factor] * a, cuts) + 1  # 1..5 oriented
    rev = np.array([it in REVERSE_KEYED for it in ITEMS])
    y[:, rev] = 6 - y[:, rev]
    careless = rng.random(n) < careless_fraction
    kind = rng.random(n)
    rand_rows = careless & (kind < 0.6)
    string_rows = careless & (kind >= 0.6)
    y[rand_rows] = rng.integers(1, 6, size=(rand_rows.sum(), 50))
    y[string_rows] = rng.choice([1, 5], size=string_rows.sum())[:, None]
    y[rng.random(y.shape) < zero_fraction] = 0
    times = rng.lognormal(8.3, 0.5, size=(n, 50)).astype(np.int64)
    testelapse = np.where(careless & (rng.random(n) < 0.7), rng.integers(40, 140, size=n),
                          rng.lognormal(5.7, 0.5, size=n).astype(np.int64))
    ipc = np.where(rng.random(n) < multi_ip_fraction, rng.integers(2, 40, size=n), 1)
    null = np.zeros(n, dtype=bool)
    if null_rows:
        null[rng.choice(n, size=min(null_rows, n), replace=False)] = True
    start = np.datetime64("2016-03-03T02:01:01") + rng.integers(0, 8e7, size=n).astype("timedelta64[s]")
    date = np.datetime_as_string(start, unit="s")
    date = np.char.replace(date.astype("U19"), "T", " ")
    countries = np.array(["US", "GB", "DE", "IN", "CA", "AU", "PH", "NONE"])

    def as_text(values, null_mask):
        arr = pc.cast(pa.array(values), pa.string())
        return pc.if_else(pa.array(null_mask), pa.scalar("NULL"), arr) if null_mask.any() else arr

    cols = {}
    for j, name in enumerate(ITEMS):
        cols[name] = as_text(y[:, j], null)
    for j, name in enumerate(TIME_COLUMNS):
        cols[name] = as_text(times[:, j], null)
    cols["dateload"] = pa.array(date)
    cols["screenw"] = as_text(rng.choice([768, 1024, 1366, 1920, 375], size=n), np.zeros(n, bool))
    cols["screenh"] = as_text(rng.choice([1024, 768, 1080, 667], size=n), np.zeros(n, bool))
    cols["introelapse"] = as_text(rng.integers(1, 300, size=n), np.zeros(n, bool))
    cols["testelapse"] = as_text(testelapse, null)
    cols["endelapse"] = as_text(rng.integers(1, 60, size=n), np.zeros(n, bool))
    cols["IPC"] = as_text(ipc, np.zeros(n, bool))
    cols["country"] = pa.array(countries[rng.integers(0, len(countries), size=n)])
    cols["lat_appx_lots_of_err"] = as_text(np.round(rng.uniform(-40, 60, size=n), 4), np.zeros(n, bool))
    cols["long_appx_lots_of_err"] = as_text(np.round(rng.uniform(-120, 150, size=n), 4), np.zeros(n, bool))
    table = pa.table(cols)
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        fh.write(("\t".join(COLUMNS) + "\n").encode())  # pyarrow would quote the header
        pacsv.write_csv(table, fh, write_options=pacsv.WriteOptions(
            delimiter="\t", quoting_style="none", include_header=False))
    return {"careless": careless, "ipc": ipc, "null_rows": null, "n_persons": n}
