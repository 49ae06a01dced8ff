"""Statistical checks of the 2PNO Gibbs sampler and the mixture Gibbs sampler (slow).

Seeds are fixed; tolerances are stated in each test. Data are simulated here with the issue's
design, a_j ~ U(0.5, 2), d_j ~ N(0, 1), theta_i ~ N(0, 1), P(y = 1) = Phi(a theta - d)."""

import arviz as az
import jax
import numpy as np
import pytest

from bayesirt.data.simulate_binary import simulate_2pno_arrays
from bayesirt.inference.samplers import gibbs, gibbs_mixture
from bayesirt.inference.samplers.nuts import run_nuts
from bayesirt.inference.samplers.sampling import SamplerSettings, sample
from bayesirt.models import twopno

pytestmark = pytest.mark.slow


def simulate(seed, n, j, missing=0.0):
    """The issue's design (a ~ U(0.5, 2), d ~ N(0, 1), theta ~ N(0, 1))."""
    return simulate_2pno_arrays(seed, n, j, missing)


def item_table(idata, name):
    draws = idata.posterior[name].values  # chain, draw, item
    return draws.reshape(-1, draws.shape[-1])


def test_recovery_1000_by_20():
    """N = 1000, J = 20: discrimination RMSE < 0.15, difficulty RMSE < 0.1, ability EAP
    correlation > 0.9, at least 80% of the 40 item parameters inside their 90% intervals,
    max R-hat < 1.05 (4 chains x 2000 draws after 1000 burn-in)."""
    y, a, d, theta = simulate(20260101, 1000, 20)
    res = gibbs.fit(
        jax.random.key(1), y, None, gibbs.GibbsSettings(SamplerSettings(n_chains=4, n_warmup=1000, n_samples=2000))
    )
    assert not res.diverged, res.reason
    post = res.idata.posterior
    a_hat = post["discrimination"].mean(("chain", "draw")).values
    d_hat = post["difficulty"].mean(("chain", "draw")).values
    t_hat = post["ability"].mean(("chain", "draw")).values
    assert np.sqrt(np.mean((a_hat - a) ** 2)) < 0.15
    assert np.sqrt(np.mean((d_hat - d) ** 2)) < 0.1
    assert np.corrcoef(t_hat, theta)[0, 1] > 0.9
    inside = []
    for name, truth in (("discrimination", a), ("difficulty", d)):
        lo, hi = np.quantile(item_table(res.idata, name), [0.05, 0.95], axis=0)
        inside.append((lo <= truth) & (truth <= hi))
    assert np.mean(np.concatenate(inside)) >= 0.8
    items = res.summary[res.summary.parameter != "ability"]
    assert items.r_hat.max() < 1.05


def test_gibbs_agrees_with_nuts_500_by_20():
    """Same posterior, two samplers: every item parameter's posterior mean within 4 combined
    Monte Carlo standard errors (ArviZ MCSE of both), and posterior sd within 15%."""
    y, *_ = simulate(20260102, 500, 20)
    gibbs_res = gibbs.fit(
        jax.random.key(2),
        y,
        None,
        gibbs.GibbsSettings(SamplerSettings(n_chains=4, n_warmup=1000, n_samples=5000), abilities=False),
    )
    log_density = twopno.make_log_density(y)
    start = twopno.unconstrain(twopno.initial_values(y))
    nuts_res = run_nuts(
        jax.random.key(3),
        log_density,
        start,
        SamplerSettings(n_chains=4, n_warmup=500, n_samples=1000, progress_every=0),
    )
    assert not gibbs_res.diverged and not nuts_res.diverged
    nuts_a = np.exp(nuts_res.idata.posterior["log_discrimination"])
    nuts_sets = {"discrimination": nuts_a, "difficulty": nuts_res.idata.posterior["difficulty"]}
    for name, nd in nuts_sets.items():
        gd = gibbs_res.idata.posterior[name]
        g_mean, n_mean = gd.mean(("chain", "draw")).values, nd.mean(("chain", "draw")).values
        g_se = az.mcse(az.convert_to_dataset(gd.rename(name))).to_array().values.ravel()
        n_se = az.mcse(az.convert_to_dataset(nd.rename(name))).to_array().values.ravel()
        np.testing.assert_array_less(np.abs(g_mean - n_mean), 4 * np.sqrt(g_se**2 + n_se**2))
        g_sd, n_sd = gd.std(("chain", "draw")).values, nd.std(("chain", "draw")).values
        np.testing.assert_allclose(g_sd, n_sd, rtol=0.15)


def test_missing_augmented_and_left_out_give_the_same_posterior():
    """30% MCAR on 400 x 10: posterior means of the two missing-data treatments within 4
    combined MCSE, sds within 10%."""
    y, *_ = simulate(20260103, 400, 10, missing=0.3)
    settings = SamplerSettings(n_chains=4, n_warmup=500, n_samples=3000, progress_every=0)
    res = {
        m: gibbs.fit(jax.random.key(4), y, None, gibbs.GibbsSettings(settings, missing=m, abilities=False))
        for m in gibbs.MISSING_MODES
    }
    for name in ("discrimination", "difficulty"):
        s = {m: r.summary[r.summary.parameter == name].reset_index(drop=True) for m, r in res.items()}
        diff = np.abs(s["augment"]["mean"] - s["omit"]["mean"])
        se = np.sqrt(s["augment"]["mcse_mean"] ** 2 + s["omit"]["mcse_mean"] ** 2)
        np.testing.assert_array_less(diff, 4 * se)
        np.testing.assert_allclose(s["augment"]["sd"], s["omit"]["sd"], rtol=0.1)


def test_mixture_on_heights_like_data():
    """Seed 001's example: 300 heights like women's N(162, 7^2) and 400 like men's N(176, 7^2)
    (cm), known common sd 7. 90% intervals of mu_0, mu_1 and pi (= 4/7, the share of the
    component with the larger mean) cover the truth; R-hat < 1.01 (labels ordered)."""
    rng = np.random.default_rng(20260104)
    x = np.concatenate([rng.normal(162.0, 7.0, 300), rng.normal(176.0, 7.0, 400)])
    pri = gibbs_mixture.MixturePriors(lam=1 / 49.0, nu=170.0, rho=1 / 30.0**2)
    k = gibbs_mixture.kernel(x, pri)
    res = sample(
        jax.random.key(5),
        k.init_fn,
        k.step_fn,
        k.record_fn,
        SamplerSettings(n_chains=4, n_warmup=1000, n_samples=4000, progress_every=0),
        coords=k.coords,
        dims=k.dims,
    )
    post = res.idata.posterior
    mu = post["mu"].values.reshape(-1, 2)
    pi = post["pi"].values.ravel()
    for draws, truth in ((mu[:, 0], 162.0), (mu[:, 1], 176.0), (pi, 4 / 7)):
        lo, hi = np.quantile(draws, [0.05, 0.95])
        assert lo <= truth <= hi, (lo, hi, truth)
    assert np.all(mu[:, 0] <= mu[:, 1])
    assert res.summary[res.summary.parameter.isin(["mu", "pi"])].r_hat.max() < 1.01
