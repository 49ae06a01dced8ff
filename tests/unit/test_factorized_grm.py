"""Factorized GRM: likelihood assembly, priors, transforms, and the fit's failure handling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bayesirt import records
from bayesirt.data import simulate
from bayesirt.inference.execution.training import FitDivergedError, TrainSettings
from bayesirt.inference.variational import advi
from bayesirt.inference.variational import grm_advi as inference_grm_advi
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import grm
from bayesirt.studies import grm_advi


@pytest.fixture(scope="module")
def small():
    rm, truth = simulate.simulate_factorized_grm(3, 60, [3, 2], 4, ["A", "B"])
    return rm, truth


def true_params(rm, truth):
    get = lambda name: truth[truth.parameter == name]["value"].to_numpy()
    return {
        "discrimination": jnp.array(get("discrimination")),
        "base_difficulty": jnp.array(get("base_difficulty")),
        "increments": jnp.array(get("increments").reshape(rm.n_items, -1)),
        "ability": jnp.array(get("ability").reshape(rm.n_persons, -1)),
    }


def test_log_likelihood_is_the_sum_over_items_of_own_scale_terms(small, x64):
    rm, truth = small
    p = true_params(rm, truth)
    st = fgrm.structure_of(rm)
    y = np.array(rm.responses)
    y[0, 1] = -1  # a missing cell
    ll = np.asarray(fgrm.log_likelihood(p, jnp.array(y), st))
    alpha = np.asarray(p["discrimination"])
    tau = np.asarray(grm.ordered_cuts(p["base_difficulty"], p["increments"]))
    theta = np.asarray(p["ability"])
    from scipy.special import expit

    expected = np.zeros(rm.n_persons)
    for n in range(rm.n_persons):
        for i in range(rm.n_items):
            if y[n, i] < 0:
                continue
            s = rm.scale_index[i]
            cum = np.concatenate([[1], expit(alpha[i] * (theta[n, s] - tau[i])), [0]])
            expected[n] += np.log(cum[y[n, i]] - cum[y[n, i] + 1])
    np.testing.assert_allclose(ll, expected, rtol=1e-10)


def test_priors_match_scipy(small, x64):
    rm, truth = small
    p = true_params(rm, truth)
    pr = fgrm.Priors(
        discrimination_scale=1.5,
        base_difficulty_loc=0.5,
        base_difficulty_scale=2.0,
        increment_scale=0.7,
        ability_scale=1.3,
    )
    st = fgrm.structure_of(rm)
    expected_global = (
        stats.halfnorm(scale=1.5).logpdf(p["discrimination"]).sum()
        + stats.norm(0.5, 2.0).logpdf(p["base_difficulty"]).sum()
        + stats.halfnorm(scale=0.7).logpdf(p["increments"]).sum()
    )
    np.testing.assert_allclose(fgrm.log_prior(p, pr, st, local=False), expected_global, rtol=1e-6)
    np.testing.assert_allclose(
        fgrm.log_prior(p, pr, st, local=True), stats.norm(0, 1.3).logpdf(p["ability"]).sum(1), rtol=1e-6
    )


@pytest.mark.parametrize("name", ["discrimination", "base_difficulty", "increments", "ability"])
def test_bijectors_round_trip_and_map_onto_the_support(name, x64):
    bij = fgrm.bijectors()[name]
    u = jnp.linspace(-8, 8, 41)
    x = bij.forward(u)
    np.testing.assert_allclose(bij.inverse(x), u, rtol=1e-9, atol=1e-9)
    support_positive = name in ("discrimination", "increments")
    assert bool(jnp.all(x > 0)) == support_positive or not support_positive
    # log|J| against a finite difference of the forward map
    eps = 1e-6
    fd = (bij.forward(u + eps) - bij.forward(u - eps)) / (2 * eps)
    np.testing.assert_allclose(
        jnp.broadcast_to(bij.forward_log_det_jacobian(u, event_ndims=0), u.shape), np.log(fd), atol=1e-6
    )


def test_initial_values_have_model_shapes_and_order(small):
    rm, _ = small
    init = fgrm.initial_values(rm.responses, fgrm.structure_of(rm))
    shapes = fgrm.parameter_shapes(fgrm.structure_of(rm), rm.n_persons)
    assert {k: np.shape(v) for k, v in init.items()} == {k: tuple(v) for k, v in shapes.items()}
    assert np.all(init["increments"] > 0) and np.all(init["discrimination"] > 0)


def test_nan_likelihood_stops_the_fit_and_its_record_says_so(small, tmp_path):
    rm, _ = small

    def broken(params, batch, key):  # finite for a while, then NaN once discriminations grow
        ll = fgrm.log_likelihood(params, batch["y"], fgrm.structure_of(rm))
        return jnp.where(params["discrimination"].max() > 1.05, jnp.nan, ll)

    with pytest.raises(FitDivergedError, match="step"):  # the driver itself raises ...
        advi_fit_raising(rm, broken)
    # ... and the study runner keeps the last good state and writes a record that says so
    out = grm_advi.fit(
        rm,
        seed=0,
        settings=TrainSettings(max_steps=500, progress_every=0),
        priors=fgrm.Priors(),
        log_likelihood=broken,
        posterior_draws=20,
    )
    rec = out.record
    assert rec["converged"] is False and rec["diverged_at_step"] is not None
    assert "non-finite" in rec["convergence_reason"]
    assert np.isfinite(out.estimates["mean"]).all()
    records.write_fit(out, tmp_path / "fit")
    assert (tmp_path / "fit" / "fit.json").exists()


def advi_fit_raising(rm, log_likelihood):
    st = fgrm.structure_of(rm)
    model = inference_grm_advi.advi_model(st, fgrm.Priors(), rm.n_persons, log_likelihood)
    q0 = advi.init(model, fgrm.initial_values(rm.responses, st))
    return advi.fit(
        jax.random.key(0),
        {"y": jnp.asarray(rm.responses, jnp.int32)},
        model,
        advi.ADVISettings(train=TrainSettings(max_steps=500, progress_every=0)),
        init=q0,
    )


# slow (two fits, 10 s): in CI the workflow tests cover it, every fit of the test config
# validated against the schemas and the whole run compared bit for bit with a second run
@pytest.mark.slow
def test_fit_outputs_are_complete_and_reproducible(small, tmp_path):
    rm, truth = small
    settings = TrainSettings(max_steps=200, min_steps=100, window=50, progress_every=0)
    a = grm_advi.fit(rm, seed=5, settings=settings, priors=fgrm.Priors(), truth=truth, posterior_draws=50)
    b = grm_advi.fit(rm, seed=5, settings=settings, priors=fgrm.Priors(), truth=truth, posterior_draws=50)
    assert a.estimates.equals(b.estimates) and a.losses.equals(b.losses)
    assert {k: v for k, v in a.record.items() if k != "timing"} == {k: v for k, v in b.record.items() if k != "timing"}
    assert set(a.estimates.parameter) == {"discrimination", "base_difficulty", "increments", "ability"}
    assert len(a.estimates) == len(truth) and a.estimates["true"].notna().all()
    records.write_fit(a, tmp_path / "fit")
    assert sorted(p.name for p in (tmp_path / "fit").iterdir()) == [
        "estimates.csv",
        "fit.json",
        "loss.csv",
        "posterior.nc",
    ]


def test_a_grm_fit_reports_corrected_item_sds_and_its_psis_khat():
    # a small simulated data set (seed 4, 600 persons, 6 items): the record says the item sds
    # are the Laplace approximation's at the marginal mode (Newton converged), VI's own values
    # stay in vi_mean / vi_sd, the corrected discrimination sds are wider than VI's (VI ignores
    # the items' coupling with the abilities), abilities keep VI's values, and the k-hat is there
    from bayesirt.data import simulate
    from bayesirt.inference.execution.training import TrainSettings
    from bayesirt.studies import grm_advi

    rm, truth = simulate.simulate_factorized_grm(4, 600, [3, 3], 4, ["A", "B"])
    settings = TrainSettings(max_steps=600, min_steps=300, progress_every=0)
    res = grm_advi.fit(rm, seed=2, settings=settings, truth=truth, posterior_draws=400)
    entry = res.record["item_uncertainty"]
    assert entry["method"] == grm_advi.CORRECTED and entry["converged"]
    assert res.record["psis"]["draws"] == 200 and res.record["psis"]["khat"] is not None
    est = res.estimates
    a = est[est.parameter == "discrimination"]
    assert (a["sd"] > a["vi_sd"]).mean() >= 5 / 6
    ability = est[est.parameter == "ability"]
    assert np.array_equal(ability["mean"], ability["vi_mean"]) and np.array_equal(ability["sd"], ability["vi_sd"])
    assert res.idata.posterior["discrimination"].std(("chain", "draw")).values == pytest.approx(a["sd"].values)
