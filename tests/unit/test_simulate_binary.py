"""Binary simulators: shapes, determinism, the link functions, and the truth table."""

import numpy as np
import pytest
from scipy.special import expit, ndtr

from bayesirt.data.simulate_binary import simulate_binary, simulate_gaussian_mixture


@pytest.mark.parametrize("model", ["1pl", "2pl", "2pno"])
def test_shapes_truth_and_determinism(model):
    rm, truth = simulate_binary(seed=11, n_persons=300, n_items=8, model=model)
    assert rm.responses.shape == (300, 8) and set(np.unique(rm.responses)) <= {0, 1}
    assert all(it.n_categories == 2 for it in rm.items) and rm.attrs["model"] == model
    assert set(truth.parameter) == {"discrimination", "difficulty", "ability"}
    assert (truth.parameter == "ability").sum() == 300 and (truth.parameter == "difficulty").sum() == 8
    a = truth[truth.parameter == "discrimination"].value.to_numpy()
    assert np.all(a > 0) and (model != "1pl" or np.all(a == 1.0))
    rm2, truth2 = simulate_binary(seed=11, n_persons=300, n_items=8, model=model)
    assert np.array_equal(rm.responses, rm2.responses) and truth.equals(truth2)
    rm3, _ = simulate_binary(seed=12, n_persons=300, n_items=8, model=model)
    assert not np.array_equal(rm.responses, rm3.responses)


@pytest.mark.parametrize("model, link", [("2pl", expit), ("2pno", ndtr)])
def test_mean_response_matches_model_probability(model, link):
    # 20,000 persons: the item mean's sd is <= 0.0036; tolerance 0.015 (4 sd)
    rm, truth = simulate_binary(seed=3, n_persons=20000, n_items=5, model=model)
    a = truth[truth.parameter == "discrimination"].value.to_numpy()
    d = truth[truth.parameter == "difficulty"].value.to_numpy()
    th = truth[truth.parameter == "ability"].value.to_numpy()
    expected = link(th[:, None] * a - d).mean(0)
    assert np.allclose(rm.responses.mean(0), expected, atol=0.015)


def test_mixture_abilities_standardized_and_bimodal():
    rm, truth = simulate_binary(
        seed=5, n_persons=20000, n_items=3, ability="mixture", mixture_means=(-1.5, 1.5), mixture_sd=0.4
    )
    th = truth[truth.parameter == "ability"].value.to_numpy()
    assert abs(th.mean()) < 0.03 and abs(th.std() - 1) < 0.03
    # few persons near zero between the modes at about +-0.97
    assert np.mean(np.abs(th) < 0.2) < 0.05
    assert rm.attrs["mixture"]["standardized"] is True


def test_bad_arguments():
    with pytest.raises(ValueError, match="binary model '3pl' is not known"):
        simulate_binary(0, 10, 2, model="3pl")
    with pytest.raises(ValueError, match="ability distribution"):
        simulate_binary(0, 10, 2, ability="uniform")
    with pytest.raises(ValueError, match="mixture weights"):
        simulate_binary(0, 10, 2, ability="mixture", mixture_weights=(0.3, 0.3))


def test_gaussian_mixture():
    x, z, truth = simulate_gaussian_mixture(seed=1, n=10000, pi=0.3, mu0=-2, mu1=2, precision=4.0)
    assert abs(z.mean() - 0.3) < 0.02
    assert abs(x[z == 1].mean() - 2) < 0.03 and abs(x[z == 0].std() - 0.5) < 0.02
    assert truth["pi"] == 0.3


def test_uniform_discrimination_range():
    # seed 001's recovery design: a_j ~ U(0.5, 2); with 2,000 items the mean's sd is 0.0097
    _, truth = simulate_binary(seed=4, n_persons=10, n_items=2000, model="2pno", discrimination_range=(0.5, 2.0))
    a = truth[truth.parameter == "discrimination"].value.to_numpy()
    assert a.min() >= 0.5 and a.max() <= 2.0 and abs(a.mean() - 1.25) < 0.04
    with pytest.raises(ValueError, match="discrimination_range"):
        simulate_binary(0, 10, 2, discrimination_range=(0.0, 2.0))
