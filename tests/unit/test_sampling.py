"""The Markov-chain driver and the NUTS runner on a conjugate normal model with a closed form.

y_gi ~ N(mu_g, sigma^2), sigma known, mu_g ~ N(m0, s0^2) independently for two groups g, so the
posterior of each mu_g is normal with precision 1/s0^2 + n/sigma^2. Tolerances are in units of
ArviZ's Monte Carlo standard errors (4 MCSE: a false alarm about once in 16,000 per check),
with fixed keys, so the tests are deterministic.
"""

import logging
from typing import NamedTuple

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from bayesirt.inference.samplers.nuts import run_nuts
from bayesirt.inference.samplers.posterior_summary import STAT_COLUMNS, convergence, summary_table
from bayesirt.inference.samplers.sampling import SamplerSettings, sample, to_inference_data

M0, S0, SIGMA = 0.0, 3.0, 2.0
Y = np.random.default_rng(0).normal([[1.0, -2.0]], SIGMA, size=(20, 2)).astype(np.float32)  # persons x groups
POST_PREC = 1 / S0**2 + Y.shape[0] / SIGMA**2
POST_MEAN = (M0 / S0**2 + Y.sum(0) / SIGMA**2) / POST_PREC
POST_SD = 1 / np.sqrt(POST_PREC)


def log_post(mu, y=Y):
    return jnp.sum(-0.5 * ((mu - M0) / S0) ** 2) + jnp.sum(-0.5 * ((y - mu) / SIGMA) ** 2)


class ExactState(NamedTuple):
    mu: jax.Array


def exact_init(key):
    return ExactState(10.0 * jax.random.normal(key, (2,)))


def exact_step(key, state):
    """Gibbs with one block: mu from its full conditional, which is the posterior itself."""
    return ExactState(POST_MEAN + POST_SD * jax.random.normal(key, (2,)))


class RWState(NamedTuple):
    mu: jax.Array
    logp: jax.Array
    accepted: jax.Array


def rw_init(key, y):
    mu = 5.0 * jax.random.normal(key, (2,))
    return RWState(mu, log_post(mu, y), jnp.zeros((), bool))


def rw_step(key, state, y):
    """Random-walk Metropolis on both means jointly (scale 2.4/sqrt(d) posterior sds)."""
    prop_key, acc_key = jax.random.split(key)
    proposal = state.mu + 1.7 * POST_SD * jax.random.normal(prop_key, (2,))
    logp = log_post(proposal, y)
    accept = jnp.log(jax.random.uniform(acc_key)) < logp - state.logp
    return RWState(jnp.where(accept, proposal, state.mu), jnp.where(accept, logp, state.logp), accept)


class _ListHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def exact_run():
    handler = _ListHandler()
    logger = logging.getLogger("bayesirt")
    logger.addHandler(handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        settings = SamplerSettings(n_chains=4, n_warmup=50, n_samples=2000, thin=2, chunk=500)
        result = sample(
            jax.random.key(1),
            exact_init,
            exact_step,
            lambda s: {"mu": s.mu},
            settings,
            coords={"group": ["a", "b"]},
            dims={"mu": ["group"]},
            label="exact",
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old)
    return result, handler.messages


def _check_moments(summary, idata, name="mu"):
    post = idata.posterior[name]
    mcse_sd = az.mcse(idata, var_names=[name], method="sd")[name].values
    mean, sd = summary["mean"].to_numpy(), summary["sd"].to_numpy()
    assert np.all(np.abs(mean - POST_MEAN) < 4 * summary["mcse_mean"].to_numpy()), (mean, POST_MEAN)
    assert np.all(np.abs(sd - POST_SD) < 4 * mcse_sd), (sd, POST_SD, mcse_sd)
    # the MCSEs themselves are small enough for these checks to mean something
    assert np.all(summary["mcse_mean"] < 0.05 * POST_SD) and np.all(mcse_sd < 0.05 * POST_SD)
    assert post.sizes["chain"] == 4


def test_exact_gibbs_recovers_posterior(exact_run):
    result, _ = exact_run
    assert not result.diverged and result.reason == "completed"
    assert result.idata.posterior["mu"].shape == (4, 1000, 2)  # chain x draw x group; 2000 / thin 2
    assert result.n_sweeps == 50 + 2000
    _check_moments(result.summary, result.idata)
    conv = convergence(result.summary)
    assert conv["max_r_hat"] < 1.01 and conv["min_ess_bulk"] > 2000 and conv["min_ess_tail"] > 2000
    assert conv["n_parameters"] == 2 and conv["n_nan_r_hat"] == 0
    assert result.compile_seconds > 0 and result.wall_seconds > 0


def test_summary_table_is_tidy(exact_run):
    result, _ = exact_run
    table = result.summary
    assert list(table.columns) == ["parameter", "group"] + STAT_COLUMNS
    assert list(table.index) == ["mu[a]", "mu[b]"] and list(table["group"]) == ["a", "b"]
    assert (table["q5"] < table["mean"]).all() and (table["mean"] < table["q95"]).all()
    # q5/q95 are the 90% equal-tailed interval of the draws
    draws = result.idata.posterior["mu"].values.reshape(-1, 2)
    np.testing.assert_allclose(table["q5"], np.quantile(draws, 0.05, axis=0), rtol=1e-5)
    # ArviZ's own summary agrees on the diagnostics
    ref = az.summary(result.idata, kind="diagnostics")
    np.testing.assert_allclose(table["r_hat"], ref["r_hat"], atol=0.006)  # az.summary rounds to 2 decimals
    np.testing.assert_allclose(table["ess_bulk"], ref["ess_bulk"], atol=1)
    assert "created_at" not in result.idata.posterior.attrs


def test_progress_lines(exact_run):
    _, messages = exact_run
    progress = [m for m in messages if "sweeps/s" in m]
    # chunks: burn-in 50; sampling 250 draws x thin 2 = 500 sweeps per chunk, 2000 / 500 -> 4 chunks
    assert len(progress) == 1 + 4
    assert progress[0].startswith("exact: sweep 50 / 2050 (burn-in)")
    assert progress[-1].startswith("exact: sweep 2050 / 2050 (sampling)")


def test_random_walk_metropolis_recovers_posterior():
    settings = SamplerSettings(n_chains=4, n_warmup=500, n_samples=6000, chunk=2000, progress_every=0)
    result = sample(
        jax.random.key(2),
        rw_init,
        rw_step,
        lambda s: {"mu": s.mu},
        settings,
        stats_fn=lambda s: {"accepted": s.accepted},
        label="rwm",
        data=Y,
    )
    assert result.idata.posterior["mu"].shape == (4, 6000, 2)
    assert result.idata.sample_stats["accepted"].shape == (4, 6000)
    assert 0.2 < float(result.idata.sample_stats["accepted"].mean()) < 0.5
    _check_moments(result.summary, result.idata)
    assert convergence(result.summary)["max_r_hat"] < 1.01


class Counter(NamedTuple):
    sweep: jax.Array
    x: jax.Array


def counter_step(key, state):
    return Counter(state.sweep + 1, jax.random.normal(key, ()))


def counter_init(key):
    return Counter(jnp.zeros((), jnp.int32), jnp.zeros(()))


def _counter_run(key, **kw):
    settings = SamplerSettings(
        **{"n_chains": 3, "n_warmup": 13, "n_samples": 31, "thin": 3, "chunk": 7, "progress_every": 0, **kw}
    )
    return sample(key, counter_init, counter_step, lambda s: {"sweep": s.sweep, "x": s.x}, settings)


@pytest.fixture(scope="module")
def counter_run():
    return _counter_run(jax.random.key(4))


def test_burn_in_thinning_and_sweep_count(counter_run):
    sweeps = counter_run.idata.posterior["sweep"].values
    # 31 // 3 = 10 draws per chain; draw d is the state after sweep 13 + 3 (d + 1)
    assert sweeps.shape == (3, 10)
    np.testing.assert_array_equal(sweeps, np.broadcast_to(13 + 3 * np.arange(1, 11), (3, 10)))
    assert counter_run.n_sweeps == 13 + 30
    assert int(counter_run.extra["final_state"].sweep[0]) == 43


def test_same_key_same_draws_whatever_the_chunks(counter_run):
    x = counter_run.idata.posterior["x"].values
    again = _counter_run(jax.random.key(4))
    np.testing.assert_array_equal(x, again.idata.posterior["x"].values)
    assert again.idata.posterior.attrs == counter_run.idata.posterior.attrs
    # sweep s of chain c always uses fold_in(chain key c, s): chunking does not change the draws
    rechunked = _counter_run(jax.random.key(4), chunk=100)
    np.testing.assert_array_equal(x, rechunked.idata.posterior["x"].values)
    assert len(np.unique(x)) == x.size  # chains and draws all differ


class Blowing(NamedTuple):
    sweep: jax.Array
    x: jax.Array
    blow: jax.Array  # 1.0: x turns NaN from sweep 130 on


def blowing_step(key, state):
    sweep = state.sweep + 1
    bad = (sweep >= 130) & (state.blow > 0)
    return Blowing(sweep, jnp.where(bad, jnp.nan, jax.random.normal(key, ())), state.blow)


def _blowing_run(blow, n_warmup=20):
    def init(key):
        return Blowing(jnp.zeros((), jnp.int32), jnp.zeros(()), jnp.asarray(blow, jnp.float32))

    settings = SamplerSettings(n_chains=2, n_warmup=n_warmup, n_samples=200, chunk=50, progress_every=0)
    return sample(jax.random.key(6), init, blowing_step, lambda s: {"x": s.x}, settings, label="blow")


def test_non_finite_guard_keeps_draws_before(caplog):
    with caplog.at_level(logging.ERROR, logger="bayesirt"):
        result = _blowing_run(1.0)
    # sweeps 1-20 burn-in, sampling chunks 21-70, 71-120, 121-170 (bad from sweep 130)
    assert result.diverged
    assert "state.x" in result.reason and "draws.x" in result.reason
    assert "sweeps 121-170" in result.reason and "chains 0, 1" in result.reason
    assert result.idata.posterior["x"].shape == (2, 100)
    assert np.isfinite(result.idata.posterior["x"].values).all()
    assert result.n_sweeps == 120
    assert any("non-finite" in r.getMessage() for r in caplog.records)
    # the draws kept are those of the same sampler that never blows up
    fine = _blowing_run(0.0)
    assert not fine.diverged and fine.idata.posterior["x"].shape == (2, 200)
    np.testing.assert_array_equal(fine.idata.posterior["x"].values[:, :100], result.idata.posterior["x"].values)


def test_non_finite_guard_in_burn_in():
    early = _blowing_run(1.0, n_warmup=200)
    assert early.diverged and "burn-in" in early.reason and "sweeps 101-150" in early.reason
    assert early.idata.posterior["x"].shape == (2, 0)
    assert len(early.summary) == 1 and early.summary[STAT_COLUMNS].isna().all(axis=None)


def test_summary_table_scalar_and_vector_variables():
    rng = np.random.default_rng(7)
    idata = to_inference_data(
        {"s": rng.normal(size=(2, 50)), "a": rng.normal(size=(2, 50, 3, 2))}, dims={"a": ["item", "k"]}
    )
    table = summary_table(idata)
    assert list(table.columns) == ["parameter", "item", "k"] + STAT_COLUMNS
    assert len(table) == 1 + 6
    assert table.loc["s", "item"] != table.loc["s", "item"]  # NaN: no such index
    a = table[table["parameter"] == "a"]
    assert list(a.index[:2]) == ["a[0, 0]", "a[0, 1]"] and list(a["k"][:2]) == [0, 1]
    only = summary_table(idata, var_names=["s"])
    assert list(only.index) == ["s"]


@pytest.fixture(scope="module")
def nuts_run():
    settings = SamplerSettings(n_chains=4, n_warmup=300, n_samples=1500, progress_every=0)
    return run_nuts(
        jax.random.key(8),
        lambda p: log_post(p["mu"]),
        {"mu": jnp.zeros(2)},
        settings,
        coords={"group": ["a", "b"]},
        dims={"mu": ["group"]},
    )


def test_nuts_recovers_conjugate_posterior(nuts_run):
    result = nuts_run
    assert not result.diverged and result.reason == "completed"
    assert result.idata.posterior["mu"].shape == (4, 1500, 2)
    assert result.idata.sample_stats["diverging"].shape == (4, 1500)
    assert result.extra["n_divergent"] == 0
    _check_moments(result.summary, result.idata)
    assert list(result.summary.columns) == ["parameter", "group"] + STAT_COLUMNS
    assert convergence(result.summary)["max_r_hat"] < 1.01
    assert result.n_sweeps == 1800
    assert result.compile_seconds > 0 and 0 < result.wall_seconds
    assert result.wall_seconds == pytest.approx(result.extra["warmup_seconds"] + result.extra["sampling_seconds"])


def test_chunk_plan_reuses_the_sampling_program_for_burn_in():
    from bayesirt.inference.execution.chains import _plan

    plan = _plan(SamplerSettings(n_warmup=1100, n_samples=1200, thin=2, chunk=500))
    # 250 draws x thin 2 = 500 sweeps per chunk; burn-in 2 x 500 through that program + 100 alone
    assert [(p, prog, n) for p, prog, n in plan] == [
        ("burn-in", (True, 250), 500),
        ("burn-in", (True, 250), 500),
        ("burn-in", (False, 100), 100),
        ("sampling", (True, 250), 500),
        ("sampling", (True, 250), 500),
        ("sampling", (True, 100), 200),
    ]
    assert len({prog for _, prog, _ in plan}) == 3


@pytest.mark.parametrize(("chains", "draws"), [(4, 400), (4, 401), (2, 9), (4, 3000), (1, 50), (4, 3)])
def test_array_wide_diagnostics_equal_arviz(chains, draws):
    """R-hat, bulk and tail ESS and MCSE of the mean, computed for every parameter at once, are
    ArviZ's to float64 rounding (1e-13 relative measured, 1e-10 allowed; seed 0): AR(1) chains
    with autocorrelation 0 to 0.99 (long Geyer sequences, and ones that stop at lag 1), some
    chains shifted so that R-hat is large, an odd number of draws (split chains drop the middle
    one), one chain (no R-hat), three draws (nothing), a parameter with tied draws and one that
    never moves."""
    import arviz as az

    from bayesirt.inference.samplers import posterior_summary

    rng = np.random.default_rng(0)
    p = 60
    phi = np.linspace(0.0, 0.99, p)
    x = np.zeros((chains, draws, p))
    e = rng.normal(size=(chains, draws, p))
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    x[0, :, :20] += 0.5
    x[:, :, -2] = np.round(x[:, :, -2])  # ties
    x[:, :, -1] = 3.0  # never moves
    fast = posterior_summary._diagnostics_vectorized(x)
    ds = az.convert_to_dataset({"a": x})
    for key, ref in (
        ("r_hat", az.rhat(ds)),
        ("ess_bulk", az.ess(ds, method="bulk")),
        ("ess_tail", az.ess(ds, method="tail")),
        ("mcse_mean", az.mcse(ds, method="mean")),
    ):
        np.testing.assert_allclose(fast[key], ref["a"].values, rtol=1e-10, atol=1e-300, equal_nan=True)
    assert np.isfinite(fast["ess_tail"][:-1]).all() or draws < 4


def test_summary_table_equals_arviz_summary():
    """The tidy summary's statistics are ArviZ's ``az.summary`` (means, sds, diagnostics to
    rounding; its 90% interval is the equal-tailed one, ArviZ's an HDI, so the quantiles are
    checked against numpy's)."""
    import arviz as az

    from bayesirt.inference.samplers import posterior_summary

    rng = np.random.default_rng(2)
    posterior = {"a": rng.normal(size=(4, 500, 3)).cumsum(axis=1), "b": rng.normal(size=(4, 500))}
    idata = az.from_dict(posterior=posterior)
    ours = posterior_summary.summary_table(idata)
    ref = az.summary(idata, round_to="none", stat_focus="mean")
    for ours_col, ref_col in (
        ("mean", "mean"),
        ("sd", "sd"),
        ("mcse_mean", "mcse_mean"),
        ("ess_bulk", "ess_bulk"),
        ("ess_tail", "ess_tail"),
        ("r_hat", "r_hat"),
    ):
        np.testing.assert_allclose(ours[ours_col], ref.loc[ours.index, ref_col], rtol=1e-10)
    np.testing.assert_allclose(ours.loc["b", "q95"], np.quantile(posterior["b"], 0.95), rtol=1e-12)


def test_array_wide_statistics_in_slices_change_no_value(monkeypatch):
    """A large variable goes through in slices (memory); every parameter's statistics are its
    own, so slices of 7 persons give the same table up to float64 rounding (the FFTs are batched
    differently: 1e-15 relative measured, 1e-12 allowed)."""
    import arviz as az

    from bayesirt.inference.samplers import posterior_summary

    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 60, 5003)).astype(np.float32).cumsum(axis=1)
    idata = az.from_dict(posterior={"ability": x}, dims={"ability": ["person"]})
    whole = posterior_summary.summary_table(idata)
    monkeypatch.setattr(posterior_summary, "VECTORIZED_SLICE_VALUES", 4 * 60 * 7)
    sliced = posterior_summary.summary_table(idata)
    pd.testing.assert_frame_equal(sliced, whole, rtol=1e-12, atol=0)
