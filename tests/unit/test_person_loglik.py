"""The one importance-sampled person log-likelihood evaluator against quadrature."""

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt.data.simulate_binary import simulate_binary
from bayesirt.evaluation import person_loglik
from bayesirt.inference.marginal import mml_posterior
from bayesirt.models import irt2pl


def test_importance_sampling_matches_quadrature():
    # seed 5: 300 persons x 10 binary items, 10% missing (item 0 always observed)
    rm, truth = simulate_binary(5, 300, 10)
    y = rm.responses.copy()
    y[np.random.default_rng(0).uniform(size=y.shape) < 0.1] = -1
    y[:, 0] = rm.responses[:, 0]
    a = truth[truth.parameter == "discrimination"].value.to_numpy()
    d = truth[truth.parameter == "difficulty"].value.to_numpy()
    st = irt2pl.Structure("2pl", 10, 1)
    items = {
        "log_discrimination": jnp.log(jnp.asarray(a, jnp.float32))[:, None],
        "difficulty": jnp.asarray(d, jnp.float32),
    }
    ll = lambda yb, t: irt2pl.log_likelihood(dict(items, ability=t), yb, st)
    est = person_loglik.laplace_importance_loglik(jax.random.key(0), ll, y, 1, n_samples=500)
    with jax.enable_x64(True):
        exact = mml_posterior.marginal_loglik(y, a, d[:, None], 2, n_nodes=61)
    err = np.abs(est - exact)
    assert err.max() < 0.05 and err.mean() < 0.01, (err.max(), err.mean())
