"""The Laplace correction of variational item sds for the models of ``models.irt2pl``
(``inference.marginal.irt2pl_laplace``), against marginal ML by quadrature (``inference.marginal.mml``) and its
observed-information standard errors (``inference.marginal.mml_information``), on simulated 2PL data."""

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import expit

from bayesirt.inference.marginal import irt2pl_laplace, laplace, mml, mml_information, mml_posterior
from bayesirt.models import irt2pl


def simulated_2pl(seed=11, n_persons=2000, n_items=8, missing=0.2):
    """P(y = 1) = sigmoid(a theta - d), theta ~ N(0, 1), then MCAR cells hidden."""
    rng = np.random.default_rng(seed)
    a, d = np.linspace(0.7, 2.0, n_items), np.linspace(-1.2, 1.2, n_items)
    theta = rng.standard_normal(n_persons)
    y = (rng.random((n_persons, n_items)) < expit(np.outer(theta, a) - d)).astype(np.int64)
    y[rng.random(y.shape) < missing] = -1
    return y, a, d


def unconstrained(a, d):
    return {"log_discrimination": jnp.log(jnp.asarray(a))[:, None], "difficulty": jnp.asarray(d)}


def test_the_objective_is_the_marginal_likelihood_and_the_prior():
    # seed 11, N = 2,000, 8 items, 20% MCAR: against mml's quadrature of the same likelihood
    y, a, d = simulated_2pl()
    st, priors = irt2pl.Structure("2pl", y.shape[1]), irt2pl.ItemPriors()
    f = irt2pl_laplace.negative_log_marginal_posterior(y, st, priors, n_nodes=21)
    items = unconstrained(a, d)
    marginal = mml_posterior.marginal_loglik(y, a, d[:, None], n_categories=2, n_nodes=21).sum()
    expected = -(marginal + float(irt2pl.item_log_prior(items, priors)))
    assert float(f(items)) == pytest.approx(expected, rel=1e-5)


def test_laplace_sds_match_marginal_ml_standard_errors_and_the_centre_its_estimate():
    # seed 11, N = 2,000: the priors move the mode and the curvature little, so the centre is
    # within 0.5 standard errors of the ML estimate (measured: 0.35 at most, on the largest
    # discrimination, 2.0, which the log-normal prior around 1 pulls in) and the
    # discriminations' sds within 10% of its standard errors
    y, a, d = simulated_2pl()
    st = irt2pl.Structure("2pl", y.shape[1])
    ml = mml.fit(None, y, mml.Structure(2), mml.MMLSettings(max_iter=500, tol=1e-6, n_nodes=21))
    se = mml_information.standard_errors(y, ml.discrimination, ml.cuts, mml.Structure(2), n_nodes=21)
    start = unconstrained(a * 1.3, d + 0.3)  # away from the mode, as a biased VI fit would be
    post = irt2pl_laplace.item_posterior(y, st, start, n_draws=4000, seed=0)
    assert post.converged and post.newton_steps >= 1
    mean, sd = post.summary["discrimination"]
    shift = np.abs(np.exp(post.centre["log_discrimination"][:, 0]) - ml.discrimination) / se.discrimination
    assert shift.max() < 0.5, shift
    ratio = sd[:, 0] / se.discrimination
    assert np.all(np.abs(ratio - 1) < 0.10), ratio
    assert post.summary["difficulty"][0].shape == (y.shape[1],)


def test_more_than_one_ability_dimension_is_refused_in_one_line():
    y, _, _ = simulated_2pl(n_persons=50)
    st = irt2pl.Structure("2pl", y.shape[1], n_factors=2)
    with pytest.raises(ValueError, match="integrates one ability dimension; the model has 2"):
        irt2pl_laplace.negative_log_marginal_posterior(y, st, irt2pl.ItemPriors())


def test_the_grm_objective_with_items_of_different_lengths():
    # seed 3, N = 500, items with 3, 5 and 4 categories (the short items' filler gaps unused):
    # against mml's quadrature at the same cuts
    rng = np.random.default_rng(3)
    cats = np.array([3, 5, 4])
    st = irt2pl.Structure("grm", 3, 1, tuple(int(c) for c in cats))
    items = {
        "log_discrimination": jnp.log(jnp.array([[0.9], [1.4], [1.1]])),
        "first_cut": jnp.array([-1.0, -1.5, -0.5]),
        "log_gaps": jnp.log(jnp.array([[0.8, 0.5, 0.5], [0.7, 0.9, 0.6], [1.0, 0.6, 0.5]])),
    }
    y = np.stack([rng.integers(0, c, 500) for c in cats], axis=1)
    y[rng.random(y.shape) < 0.2] = -1
    y = y[(y >= 0).any(1)]  # mml's per-person likelihood wants an answer from each person
    priors = irt2pl.ItemPriors()
    c = irt2pl.constrain(items, st)
    marginal = mml_posterior.marginal_loglik(
        y, np.asarray(c["discrimination"][:, 0]), np.asarray(c["cuts"]), cats, n_nodes=21
    )
    expected = -(marginal.sum() + float(irt2pl.item_log_prior(items, priors)))
    f = irt2pl_laplace.negative_log_marginal_posterior(y, st, priors, n_nodes=21)
    assert float(f(items)) == pytest.approx(expected, rel=1e-5)


def test_newton_compiles_once_for_data_passed_as_arguments_and_the_correction_reuses_it():
    # a quadratic whose data (its centre) is an argument: the second data set of the same shape
    # is solved without tracing f again; then two 2PL data sets of one shape (seeds 11, 12)
    # share the correction's objective and its compiled programs
    traces = []

    def f(u, centre):
        traces.append(1)  # runs only when JAX traces f
        return jnp.sum((u - centre) ** 2 * jnp.arange(1.0, 4.0))

    for centre in ([1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]):
        u, h, steps, converged = laplace.newton(f, np.zeros(3), args=(jnp.asarray(centre),))
        assert converged and np.allclose(u, centre, atol=1e-4) and np.allclose(np.diag(h), [2.0, 4.0, 6.0])
    assert len(traces) == 2  # once for the value and gradient, once for the Hessian

    st = irt2pl.Structure("2pl", 8)
    before = laplace._programs.cache_info()
    for seed in (11, 12):
        y, a, d = simulated_2pl(seed=seed, n_persons=300)
        irt2pl_laplace.item_posterior(y, st, unconstrained(a, d), n_draws=10, n_nodes=11)
    after = laplace._programs.cache_info()
    assert after.misses - before.misses <= 1 and after.hits - before.hits >= 1


def test_item_values_of_the_wrong_shape_are_refused():
    y, a, d = simulated_2pl(n_persons=50)
    with pytest.raises(ValueError, match="do not fit the model's"):
        irt2pl_laplace.item_posterior(y, irt2pl.Structure("2pl", 8), {"difficulty": jnp.asarray(d)})
