"""PSIS k-hat of the vibo and dcm_bbvi studies' variational fits: the log importance ratios of
VIBO, mean-field VI and BBVI equal an independent float64 computation of
log p(y, z) - log q(z) at the same draws (numpy and scipy densities, q at a point the test sets),
and every such fit's record carries the ``psis`` entry (fit_record schema), one per fit of a
block, from programs compiled once for the block."""

from dataclasses import replace
from pathlib import Path

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest
import yaml
from scipy import stats
from scipy.special import expit, log_softmax

from bayesirt.data.simulate_lcdm import simulate_lcdm
from bayesirt.inference.dcm import bbvi, bbvi_family, bbvi_psis
from bayesirt.inference.variational import mfvi, psis, vibo, vibo_encoder, vibo_programs
from bayesirt.models import irt2pl, lcdm
from bayesirt.studies.dcm_bbvi import conditions as dcm_conditions
from bayesirt.studies.dcm_bbvi import data as dcm_data
from bayesirt.studies.dcm_bbvi import methods as dcm_methods
from bayesirt.studies.dcm_bbvi.settings import Settings as DcmSettings
from bayesirt.studies.vibo import methods as vibo_methods
from tests.configs import validated

from .test_bbvi import Q_SMALL
from .test_vibo import small_data
from .test_vibo_blocks import block_setup

ROOT = Path(__file__).resolve().parents[2]
RECORD_SCHEMA = yaml.safe_load((ROOT / "workflow" / "schemas" / "fit_record.schema.yaml").read_text())
S = 6  # draws checked one by one


def f64(tree):
    return jax.tree.map(lambda a: np.asarray(a, np.float64), tree)


# --------------------------------------------------------------------------------- IRT (vibo)


def irt_log_joint(items: dict, theta, y, st: irt2pl.Structure, priors: irt2pl.ItemPriors) -> float:
    """log p(y, d, a) in float64 numpy: the 2PL or a GRM whose items all have C categories."""
    obs = y >= 0
    disc = np.exp(items["log_discrimination"])  # (J, K)
    score = theta @ disc.T  # (N, J)
    if st.model == "2pl":
        eta = score - items["difficulty"]
        cell = np.where(y == 1, np.log(expit(eta)), np.log(expit(-eta)))
    else:
        cuts = items["first_cut"][:, None] + np.concatenate(
            [np.zeros((st.n_items, 1)), np.cumsum(np.exp(items["log_gaps"]), 1)], 1
        )  # (J, C-1)
        ge = expit(score[..., None] - cuts)  # P(y >= c), c = 1..C-1
        ge = np.concatenate([np.ones(ge.shape[:-1] + (1,)), ge, np.zeros(ge.shape[:-1] + (1,))], -1)
        probs = ge[..., :-1] - ge[..., 1:]  # (N, J, C)
        cell = np.log(np.take_along_axis(probs, np.where(obs, y, 0)[..., None].astype(int), -1)[..., 0])
    prior = sum(stats.norm.logpdf(v, *priors.of(name)).sum() for name, v in items.items())
    return np.where(obs, cell, 0.0).sum() + stats.norm.logpdf(theta).sum() + prior


def item_log_q64(q_items: dict, items: dict) -> float:
    return sum(stats.norm.logpdf(items[n], q_items["loc"][n], np.exp(q_items["log_scale"][n])).sum() for n in items)


def moved_items(params: dict, seed: int) -> dict:
    """q(d) moved off its start: means and log sds shifted at random (seeded)."""
    rng = np.random.default_rng(seed)
    shift = lambda v, s: v + jnp.asarray(s * rng.standard_normal(v.shape), v.dtype)
    q = params["items"]
    return {
        "loc": {k: shift(v, 0.3) for k, v in q["loc"].items()},
        "log_scale": {k: shift(v + 1.0, 0.3) for k, v in q["log_scale"].items()},
    }


@pytest.mark.parametrize("model", ["2pl", "grm"])
def test_vibo_log_ratios_are_log_joint_minus_log_q_at_the_draws(model):
    # 60 persons, 8 items, 20% missing (data seed 0); the encoder at its random start (key 1),
    # q(d) moved (seed 2); draws with key 3. The ratios are those of vibo.ability_draws' draws
    # (same key): log p in numpy, q(a | d, r) the encoder's product of experts, all float64;
    # 1e-4 relative (float32 sums of ~500 terms: 1e-6 seen)
    cats = (4,) * 8 if model == "grm" else ()
    y = small_data(model=model, categories=4)
    st = irt2pl.Structure(model, 8, 1, cats)
    vs = vibo.VIBOSettings(missing="prior_per_missing", hidden=(8,))
    params = vibo.init(jax.random.key(1), st, vs, y)
    params["items"] = moved_items(params, 2)
    key = jax.random.key(3)
    ratios = vibo.log_ratios(params, st, vs, key, y, n_draws=S)
    assert ratios.shape == (S,)
    items, theta = vibo.ability_draws(params, st, vs, key, y, S)
    for s in range(S):
        d = {k: v[s] for k, v in items.items()}
        mean, sd = vibo_encoder.product_of_experts(params["encoder"], d, jnp.asarray(y), st, vs)
        d64, th = f64(d), np.asarray(theta[s], np.float64)
        log_q = item_log_q64(f64(params["items"]), d64) + stats.norm.logpdf(th, f64(mean), f64(sd)).sum()
        expected = irt_log_joint(d64, th, y, st, vs.priors) - log_q
        assert ratios[s] == pytest.approx(expected, rel=1e-4), s


@pytest.mark.parametrize("model", ["2pl", "grm"])
def test_mfvi_log_ratios_are_log_joint_minus_log_q_at_the_draws(model):
    # as for VIBO; q(a) at means and log sds set at random (seed 4); draws with key 5, those of
    # mfvi.ability_draws with the same key
    cats = (4,) * 8 if model == "grm" else ()
    y = small_data(model=model, categories=4)
    st = irt2pl.Structure(model, 8, 1, cats)
    ms = mfvi.MFVISettings()
    params = mfvi.init(st, ms, y)
    params["items"] = moved_items(params, 2)
    rng = np.random.default_rng(4)
    params["abilities"] = {
        "loc": jnp.asarray(rng.normal(size=(60, 1)), jnp.float32),
        "log_scale": jnp.asarray(rng.normal(-1.0, 0.3, size=(60, 1)), jnp.float32),
    }
    key = jax.random.key(5)
    ratios = mfvi.log_ratios(params, st, ms, key, y, n_draws=S)
    items, theta = mfvi.ability_draws(params, key, S)
    qa = f64(params["abilities"])
    for s in range(S):
        d64, th = f64({k: v[s] for k, v in items.items()}), np.asarray(theta[s], np.float64)
        log_q = (
            item_log_q64(f64(params["items"]), d64) + stats.norm.logpdf(th, qa["loc"], np.exp(qa["log_scale"])).sum()
        )
        assert ratios[s] == pytest.approx(irt_log_joint(d64, th, y, st, ms.priors) - log_q, rel=1e-4), s


@pytest.mark.parametrize("method", ["vibo_one_prior", "mfvi"])
def test_vibo_study_records_carry_psis_per_fit_of_a_block(method):
    # Two replications of the tiny 2PL design of test_vibo_blocks (data seeds 40, 41, fit seeds
    # 60, 61; 150 steps) fitted as a block: each record has its own k-hat from KHAT_DRAWS joint
    # draws, one compiled program for both; it passes the record schema. The program caches are
    # emptied first: another test's fit of other sizes may have compiled the same programs
    mfvi._log_ratios_program.cache_clear()
    vibo_programs.log_ratios_program.cache_clear()
    study, reps = block_setup(method, n_reps=2)
    block = vibo_methods.fit_block(reps, study)
    khats = []
    for out in block:
        entry = out.record["psis"]
        jsonschema.validate(out.record, RECORD_SCHEMA)
        assert entry["draws"] == vibo_programs.KHAT_DRAWS and entry["limit"] == psis.KHAT_LIMIT
        assert entry["khat"] is not None and np.isfinite(entry["khat"])
        assert entry["reliable"] == (entry["khat"] <= psis.KHAT_LIMIT)
        assert out.record["timing"]["psis_seconds"] >= 0
        # the item values corrected by a Laplace approximation at the items' marginal mode
        assert out.record["item_uncertainty"]["method"] == "laplace_at_marginal_mode"
        assert out.record["item_uncertainty"]["converged"] and out.record["timing"]["item_correction_seconds"] >= 0
        khats.append(entry["khat"])
    assert khats[0] != khats[1]
    st = irt2pl.Structure("2pl", 8, 1)
    if method == "mfvi":
        program = mfvi._log_ratios_program(st, irt2pl.ItemPriors(**study.priors), vibo_programs.KHAT_DRAWS)
    else:
        vs = vibo_methods.vibo_problem(vibo_methods.prepare(reps[0], study))[1]
        program = vibo_programs.log_ratios_program(
            vibo_encoder.product_of_experts, st, vs, vs.priors, vibo_programs.KHAT_DRAWS
        )
    assert program._cache_size() == 1  # compiled once for the block's fits


# ------------------------------------------------------------------------------ LCDM (dcm_bbvi)


@pytest.fixture(scope="module")
def lcdm_small():
    # 120 persons, 8 items of 2 attributes (data seed 11); q away from its start (key 3): random
    # q(Z) logits, Cholesky factors and log sds, means shifted
    rm, _, q = simulate_lcdm(11, n_persons=120, n_items=8, q_matrix=Q_SMALL)
    prob = bbvi.prepare(rm.responses, q)
    return rm, q, prob


def moved_bbvi_params(prob, settings):
    params = bbvi_family.init_params(prob.n_persons, prob.design, settings)
    key = jax.random.PRNGKey(3)
    fm = jnp.asarray(prob.design.feature_mask, jnp.float32)
    return dict(
        params,
        rho=jax.random.normal(key, params["rho"].shape),
        mu=params["mu"] + 0.3 * jax.random.normal(jax.random.fold_in(key, 3), params["mu"].shape) * fm,
        chol_off=0.1 * jax.random.normal(jax.random.fold_in(key, 1), params["chol_off"].shape),
        log_diag=params["log_diag"] + 0.3 * jax.random.normal(jax.random.fold_in(key, 2), params["log_diag"].shape),
        log_d=params["log_d"] + 0.2 * jax.random.normal(jax.random.fold_in(key, 4), params["log_d"].shape),
    )


@pytest.mark.parametrize("monotone", [False, True])
def test_bbvi_log_ratios_are_log_joint_minus_log_q_at_the_draws(lcdm_small, monotone):
    # The joint ratio (profiles drawn): at each of S draws (bbvi_family.draw with M = 1 and the
    # draw's key of jax.random.split(key, S), key 5) the likelihood, the priors and q's
    # densities in float64 numpy and scipy; under monotonicity the Jacobian of
    # lcdm.monotone_beta by autodiff (not its closed form). 1e-4 relative
    rm, q, prob = lcdm_small
    settings = bbvi.BBVISettings(monotone=monotone)
    params = moved_bbvi_params(prob, settings)
    key = jax.random.PRNGKey(5)
    ratios = bbvi_psis.log_ratios(key, params, prob, settings, n_draws=S)
    assert ratios.shape == (S,)
    des, pr = prob.design, settings.priors
    fm = des.feature_mask.astype(bool)
    y = np.asarray(rm.responses)
    p64 = f64(params)
    c = np.tril(p64["chol_off"], -1) * (fm[:, :, None] & fm[:, None, :]) + np.einsum(
        "jk,kl->jkl", np.where(fm, np.exp(p64["log_diag"]), 1.0), np.eye(fm.shape[1])
    )
    a_q, b_q = np.exp(p64["log_ab"])
    order = jnp.asarray(des.order)
    for s, k in enumerate(jax.random.split(key, S)):
        z, u, log_pi, sigma2 = bbvi_family.draw(params, k, 1, params["rho"], jnp.asarray(des.feature_mask))
        z, u, log_pi, sigma2 = np.asarray(z[0]), np.asarray(u[0], np.float64), np.asarray(log_pi[0]), sigma2[0]
        pi = np.exp(np.asarray(log_pi, np.float64))
        pi /= pi.sum()
        sigma2 = float(sigma2)
        if monotone:
            beta = np.asarray(lcdm.monotone_beta(jnp.asarray(u, jnp.float32), order)[0], np.float64) * fm
            log_jac = 0.0
            for j in range(len(fm)):
                jac = jax.jacfwd(lambda v, j=j: lcdm.monotone_beta(v, order)[0][j])(jnp.asarray(u, jnp.float32))[:, j]
                log_jac += np.linalg.slogdet(np.asarray(jac, np.float64)[fm[j]][:, fm[j]])[1]
        else:
            beta, log_jac = u, 0.0
        eta = np.einsum("jnk,jk->nj", des.delta[:, z, :], beta)  # each person's logits at its profile
        lik = np.where(y == 1, np.log(expit(eta)), np.where(y == 0, np.log(expit(-eta)), 0.0)).sum()
        log_p = (
            lik
            + np.log(pi[z]).sum()
            + sum(stats.norm.logpdf(beta[j, fm[j]], 0, np.sqrt(sigma2)).sum() for j in range(len(fm)))
            + log_jac
            + stats.dirichlet.logpdf(pi, np.full(len(pi), pr.d0))
            + stats.invgamma.logpdf(sigma2, pr.a0, scale=pr.b0)
        )
        log_q = (
            log_softmax(p64["rho"], -1)[np.arange(len(z)), z].sum()
            + sum(
                stats.multivariate_normal.logpdf(u[j, fm[j]], p64["mu"][j, fm[j]], (c[j] @ c[j].T)[fm[j]][:, fm[j]])
                for j in range(len(fm))
            )
            + stats.dirichlet.logpdf(pi, np.exp(p64["log_d"]))
            + stats.invgamma.logpdf(sigma2, a_q, scale=b_q)
        )
        assert ratios[s] == pytest.approx(log_p - log_q, rel=1e-4), s


def test_dcm_bbvi_records_carry_psis_per_fit_of_a_block_but_em_records_do_not():
    # Two replications of the seed design (100 persons, 20% missing; data seeds 100, 101, fit
    # seeds 7, 8), BBVI with M = 10 for 160 steps, as one block: each record has its own k-hat
    # from KHAT_DRAWS joint draws, from one compiled program; EM's record has none. The program
    # cache is emptied first: another test's fit of other sizes may have compiled the same program
    bbvi_psis._log_ratios_program.cache_clear()
    config = replace(
        DcmSettings.from_config(validated()),
        n_samples=10,
        variance_repeats=0,
        bbvi_training={"max_steps": 160, "min_steps": 160},
    )
    reps = []
    for r in range(2):
        rm, truth, q = dcm_data.simulate(dcm_conditions.DESIGNS["seed"], 0.2, 100 + r, n_persons=100)
        spec = dcm_conditions.Condition("seed", "mcar20", "bbvi", r)
        reps.append(dcm_methods.Replication(rm, truth, q, spec, 7 + r))
    block = dcm_methods.fit_block(reps, config)
    khats = []
    for out in block:
        jsonschema.validate(out.record, RECORD_SCHEMA)
        entry = out.record["psis"]
        assert entry["draws"] == bbvi_psis.KHAT_DRAWS and entry["khat"] is not None and np.isfinite(entry["khat"])
        assert entry["reliable"] == (entry["khat"] <= psis.KHAT_LIMIT)
        assert out.record["item_uncertainty"]["method"] == "variational"
        khats.append(entry["khat"])
    assert khats[0] != khats[1]
    priors = dcm_methods.item_priors(config)
    assert bbvi_psis._log_ratios_program(priors, False, bbvi_psis.KHAT_DRAWS)._cache_size() == 1
    em = dcm_methods.fit("em", reps[0].rm, reps[0].truth, reps[0].q, reps[0].seed, config, reps[0].cond.fields)
    assert "psis" not in em.record
