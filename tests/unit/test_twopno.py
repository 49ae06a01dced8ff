"""2PNO / 2PL model core: likelihood in log space, priors, NUTS log density, input checks."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit
from scipy.special import log_ndtr as sp_log_ndtr
from scipy.stats import norm, truncnorm

from bayesirt.models import twopno


def test_cell_log_prob_probit_matches_scipy_and_masks_missing():
    y = jnp.array([[1, 0, -1], [0, 1, 1]], jnp.int8)
    eta = jnp.array([[0.3, -1.2, 2.0], [4.0, -30.0, 30.0]], jnp.float32)
    got = np.asarray(twopno.cell_log_prob(y, eta))
    want = np.where(np.asarray(y) == 1, sp_log_ndtr(np.asarray(eta, float)), sp_log_ndtr(-np.asarray(eta, float)))
    want[0, 2] = 0.0
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
    assert np.isfinite(got).all()


def test_cell_log_prob_far_tail_is_finite_with_finite_gradient():
    # a response predicted wrong by 30 standard deviations: log Phi(-30) ~ -454, not -inf
    g = jax.grad(lambda e: twopno.cell_log_prob(jnp.array([0, 1], jnp.int8), e).sum())(jnp.array([30.0, -30.0]))
    lp = twopno.cell_log_prob(jnp.array([0, 1], jnp.int8), jnp.array([30.0, -30.0]))
    assert np.all(np.isfinite(lp)) and np.all(np.asarray(lp) < -400)
    assert np.all(np.isfinite(g))
    # d/deta log Phi(-eta) = -phi(eta)/Phi(-eta) ~ -eta for large eta
    np.testing.assert_allclose(np.asarray(g), [-30.03, 30.03], rtol=1e-3)


def test_logit_link():
    y = jnp.array([[1, 0]], jnp.int8)
    eta = jnp.array([[0.7, 0.7]])
    got = np.asarray(twopno.cell_log_prob(y, eta, link="logit"))
    np.testing.assert_allclose(got[0], np.log([expit(0.7), 1 - expit(0.7)]), rtol=1e-6)
    with pytest.raises(ValueError, match="link 'cloglog'"):
        twopno.cell_log_prob(y, eta, link="cloglog")


def test_log_likelihood_is_per_person():
    params = {
        "ability": jnp.array([0.0, 1.0]),
        "discrimination": jnp.array([1.0, 2.0]),
        "difficulty": jnp.array([0.0, 1.0]),
    }
    y = jnp.array([[1, -1], [0, 1]], jnp.int8)
    ll = np.asarray(twopno.log_likelihood(params, y))
    want0 = norm.logcdf(0.0)
    want1 = norm.logcdf(-1.0) + norm.logcdf(2.0 - 1.0)
    np.testing.assert_allclose(ll, [want0, want1], rtol=1e-6)


def test_log_prior_matches_scipy_with_truncation():
    pri = twopno.Priors(
        ability_mean=0.5,
        ability_var=2.0,
        difficulty_mean=-1.0,
        difficulty_var=3.0,
        discrimination_mean=1.0,
        discrimination_var=0.5,
    )
    params = {
        "ability": jnp.array([0.1, -0.4]),
        "discrimination": jnp.array([0.3, 2.0]),
        "difficulty": jnp.array([0.0, 1.5]),
    }
    terms = twopno.log_prior_terms(params, pri)
    sa = np.sqrt(0.5)
    want_a = truncnorm.logpdf([0.3, 2.0], (0 - 1.0) / sa, np.inf, loc=1.0, scale=sa).sum()
    np.testing.assert_allclose(float(terms["discrimination"]), want_a, rtol=1e-5)
    np.testing.assert_allclose(float(terms["ability"]), norm.logpdf([0.1, -0.4], 0.5, np.sqrt(2)).sum(), rtol=1e-5)
    np.testing.assert_allclose(float(terms["difficulty"]), norm.logpdf([0, 1.5], -1, np.sqrt(3)).sum(), rtol=1e-5)
    bad = dict(params, discrimination=jnp.array([-0.1, 1.0]))
    assert float(twopno.log_prior(bad, pri)) == -np.inf


@pytest.mark.usefixtures("x64")
def test_unconstrained_log_density_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    y = rng.integers(-1, 2, size=(6, 4)).astype(np.int8)
    u = {
        "ability": jnp.asarray(rng.normal(size=6)),
        "log_discrimination": jnp.asarray(rng.normal(0, 0.3, 4)),
        "difficulty": jnp.asarray(rng.normal(size=4)),
    }
    f = twopno.make_log_density(y)
    g = jax.grad(f)(u)
    h = 1e-6
    for key in u:
        for k in range(u[key].shape[0]):
            e = jnp.zeros_like(u[key]).at[k].set(h)
            fd = (f({**u, key: u[key] + e}) - f({**u, key: u[key] - e})) / (2 * h)
            np.testing.assert_allclose(float(g[key][k]), float(fd), rtol=1e-6, atol=1e-8)


@pytest.mark.usefixtures("x64")
def test_unconstrained_density_includes_jacobian():
    y = jnp.array([[1, 0], [0, 1]], jnp.int8)
    pri = twopno.Priors()
    u = {
        "ability": jnp.array([0.2, -0.3]),
        "log_discrimination": jnp.array([0.1, -0.5]),
        "difficulty": jnp.array([0.0, 0.4]),
    }
    got = twopno.log_joint_unconstrained(u, y, pri)
    want = twopno.log_joint(twopno.constrain(u), y, pri) + (0.1 - 0.5)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-12)
    back = twopno.unconstrain(twopno.constrain(u))
    np.testing.assert_allclose(np.asarray(back["log_discrimination"]), [0.1, -0.5], rtol=1e-12)


@pytest.mark.parametrize("key", ["ability_var", "difficulty_var", "discrimination_var"])
def test_non_positive_prior_variance_names_the_key(key):
    with pytest.raises(ValueError, match=f"prior '{key}' must be a positive variance"):
        twopno.Priors(**{key: 0.0})


def test_priors_reject_non_finite_values():
    # unknown keys are the config schema's to catch (tests/unit/test_gibbs_study.py, test_vibo_study.py)
    assert twopno.Priors(ability_var=2).ability_var == 2
    with pytest.raises(ValueError, match="prior 'difficulty_mean' must be a finite number"):
        twopno.Priors(difficulty_mean=float("nan"))


def test_check_binary_responses_rejects_codes_naming_item_and_person():
    y = np.array([[0, 1, 1], [1, 2, 0]])
    with pytest.raises(ValueError, match=r"code 2 at person 1, item 'q2' is not binary"):
        twopno.check_binary_responses(y, ["q1", "q2", "q3"])
    with pytest.raises(ValueError, match="persons x items"):
        twopno.check_binary_responses(np.zeros(3, int))
    with pytest.raises(ValueError, match="integer codes"):
        twopno.check_binary_responses(np.array([[0.5, 1.0]]))


def test_check_binary_responses_warns_on_constant_items_and_empty_persons():
    y = np.array([[1, 0, -1], [1, 1, -1], [-1, -1, -1], [1, 0, -1]])
    msgs = []
    out = twopno.check_binary_responses(y, ["a", "b", "c"], warn=msgs.append)
    assert out.dtype == np.int8
    text = " | ".join(msgs)
    assert "item 'a' was answered 1 by every one of its 3 respondents" in text
    assert "['c'] have no observed response" in text
    assert "1 person(s) with no observed response (first: person 2) are kept" in text
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        twopno.check_binary_responses(y, ["a", "b", "c"])
    assert len(caught) == 3


def test_initial_values_are_finite_and_sensible():
    rng = np.random.default_rng(1)
    y = (rng.uniform(size=(200, 5)) < np.array([0.1, 0.3, 0.5, 0.7, 0.9])).astype(np.int8)
    y[:3] = -1
    start = twopno.initial_values(y)
    assert all(np.isfinite(v).all() for v in start.values())
    # easy items (high proportion correct) get low difficulty
    assert np.all(np.diff(start["difficulty"]) < 0)
    assert np.all(start["ability"][:3] == 0.0)
