"""Every model has one likelihood signature (``bayesirt.models``): ``log_likelihood(params, y,
structure)``, each person's log-likelihood, the persons' latent values in ``params``; and the
LCDM's, new in that signature, matches enumeration."""

import importlib
import inspect

import numpy as np
import pytest
from scipy.special import expit, logsumexp

from bayesirt.models import lcdm

MODELS = ("twopno", "irt2pl", "mgrm", "mixture_grm", "factorized_grm", "lcdm")


@pytest.mark.parametrize("name", MODELS)
def test_every_model_spells_its_likelihood_one_way(name):
    module = importlib.import_module(f"bayesirt.models.{name}")
    params = list(inspect.signature(module.log_likelihood).parameters)
    assert len(params) == 3 and params[:2] == ["params", "y"], f"{name}.log_likelihood{tuple(params)}"
    for old in ("log_lik", "log_prob"):  # the spellings that one signature replaced
        assert not hasattr(module, old), f"{name}.{old}: call it log_likelihood(params, y, ...)"


def test_the_lcdm_likelihood_sums_the_profiles_out_as_enumeration_does():
    rng = np.random.default_rng(11)
    q = np.array([[1, 0], [0, 1], [1, 1], [1, 0], [0, 1]])
    des = lcdm.design(q)
    beta = rng.normal(0.0, 1.0, des.feature_mask.shape) * des.feature_mask
    log_pi = np.log(rng.dirichlet(np.ones(4)))
    y = rng.integers(0, 2, (6, 5))
    y[rng.random(y.shape) < 0.2] = -1
    got = np.asarray(lcdm.log_likelihood({"beta": beta, "log_pi": log_pi}, y, des))
    want = np.zeros(len(y))
    for i in range(len(y)):  # by hand: every profile, every observed cell
        terms = []
        for c in range(4):  # profile c masters attribute a where bit a of c is set (lcdm.profiles)
            profile = [(c >> a) & 1 for a in range(2)]
            ll = log_pi[c]
            for j in range(5):
                if y[i, j] < 0:
                    continue
                measured = np.flatnonzero(q[j])
                features = [1.0] + [float(profile[a]) for a in measured]
                if len(measured) == 2:
                    features.append(float(profile[measured[0]] * profile[measured[1]]))
                p = expit(np.dot(beta[j, : len(features)], features))
                ll += np.log(p if y[i, j] == 1 else 1 - p)
            terms.append(ll)
        want[i] = logsumexp(terms)
    np.testing.assert_allclose(got, want, rtol=1e-5)
