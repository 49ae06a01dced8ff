"""PSIS k-hat of variational fits (inference.variational.psis, advi.log_ratios_program): the log ratios are
exact where the surrogate is the posterior, k-hat matches its closed form for Gaussians, and a
GRM fit's record carries both the k-hat and what its item sds are."""

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt.inference.variational import advi, psis

from .test_advi import N, conjugate_model, data


def test_log_ratios_at_the_exact_posterior_are_the_log_evidence():
    # q = posterior (mean-field is exact in this conjugate model): every ratio p(y, z) / q(z) is
    # the evidence p(y), draw by draw (float32 sums of 800 terms: 1e-5 relative)
    model, d = conjugate_model(), data()
    x, y = np.asarray(d["x"], np.float64), np.asarray(d["y"], np.float64)
    q = advi.init(model, {"z": x.sum() / (N + 1), "theta": (y / 2)[:, None]})
    q["raw_scale"]["z"] = jnp.array(np.log(np.expm1(1 / np.sqrt(N + 1))), jnp.float32)
    q["raw_scale"]["theta"] = jnp.full((N, 1), np.log(np.expm1(np.sqrt(0.5))), jnp.float32)
    ratios = np.asarray(advi.log_ratios_program(model, N, 40)(q, jax.random.key(0), d), np.float64)
    cov_x = np.eye(N) + np.ones((N, N))
    log_ev = -0.5 * (N * np.log(2 * np.pi) + np.linalg.slogdet(cov_x)[1] + x @ np.linalg.solve(cov_x, x))
    log_ev += np.sum(-0.5 * np.log(2 * np.pi * 2) - y**2 / 4)
    np.testing.assert_allclose(ratios, log_ev, rtol=1e-5)


def test_log_ratios_spread_when_the_surrogate_is_too_narrow():
    model, d = conjugate_model(), data()
    y = np.asarray(d["y"], np.float64)
    q = advi.init(model, {"z": 0.0, "theta": (y / 2)[:, None]}, init_scale=0.3)  # posterior sd 0.71
    ratios = np.asarray(advi.log_ratios_program(model, N, 200)(q, jax.random.key(0), d))
    assert ratios.std() > 1 and psis.khat(ratios) > psis.KHAT_LIMIT


@pytest.mark.parametrize("target_sd, expected", [(0.8, None), (2.0, 0.75)])
def test_khat_of_gaussian_ratios(target_sd, expected):
    # q = N(0, 1), p = N(0, s^2): for s > 1 the ratios' tail has shape k = 1 - 1 / s^2 (0.75 at
    # s = 2); for s < 1 they are bounded (k < 0.5). 20,000 draws, seed 0; tolerance 0.15 (the
    # tail fit's finite-sample bias is downward here: 0.65 seen)
    z = np.random.default_rng(0).standard_normal(20_000)
    log_ratios = -0.5 * (z / target_sd) ** 2 - np.log(target_sd) + 0.5 * z**2
    k = psis.khat(log_ratios)
    if expected is None:
        assert k < 0.5
    else:
        assert k == pytest.approx(expected, abs=0.15)


def test_the_record_warns_above_the_limit_and_has_no_nan(caplog):
    z = np.random.default_rng(0).standard_normal(4000)
    with caplog.at_level(logging.WARNING, logger="bayesirt"):
        entry = psis.record(-0.5 * (z / 3) ** 2 + 0.5 * z**2, "fit x")
    assert not entry["reliable"] and entry["khat"] > 0.7 and "fit x: PSIS k-hat" in caplog.text
    assert psis.record(np.array([0.0, np.inf]), "y")["khat"] is None
