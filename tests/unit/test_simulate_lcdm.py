"""LCDM simulator: seed-002 design ranges, Q-matrix, profile labelling, determinism."""

import numpy as np
import pytest

from bayesirt.data import simulate_lcdm as sl


def test_profile_labelling_is_little_endian_like_seed_002():
    assert sl.profiles(2).tolist() == [[0, 0], [1, 0], [0, 1], [1, 1]]
    assert sl.profile_label(1, 2) == "10" and sl.profile_label(2, 2) == "01"
    assert sl.profile_index(np.array([[1, 0], [0, 1], [1, 1]])).tolist() == [1, 2, 3]


def test_design_matrix_matches_the_seed_table():
    # seed 002: rows = profiles 00, 10, 01, 11 (our index order); cols intercept, a1, a2, a1:a2
    dm = sl.design_matrix(np.array([1, 1]), 2)
    assert dm.tolist() == [[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 1, 1, 1]]
    assert sl.design_matrix(np.array([0, 1]), 2).tolist() == [[1, 0], [1, 0], [1, 1], [1, 1]]
    assert sl.design_matrix(np.array([0, 0]), 2).tolist() == [[1]] * 4


def test_seed_002_design():
    rm, truth, q = sl.simulate_lcdm(seed=2)
    assert rm.responses.shape == (1000, 30) and set(np.unique(rm.responses)) <= {0, 1}
    assert q.shape == (30, 2) and rm.attrs["q_matrix"] == q.tolist()
    beta = truth[truth.parameter == "beta"]
    for j in range(30):
        b = beta[beta.item == j].set_index("feature").value
        assert -1.15 <= b["intercept"] <= -1.05
        k = int(q[j].sum())
        assert len(b) == {0: 1, 1: 2, 2: 4}[k]
        if k == 1:
            assert 2.9 <= b.iloc[1] <= 3.1
        if k == 2:
            assert 1.45 <= b["a1"] <= 1.55 and 1.45 <= b["a2"] <= 1.55 and 0.45 <= b["a1:a2"] <= 0.55
    prof = truth[truth.parameter == "profile"].value.to_numpy().astype(int)
    mastery = truth[truth.parameter == "mastery"].value.to_numpy().reshape(1000, 2)
    assert np.array_equal(sl.profile_index(mastery.astype(int)), prof)
    # uniform profiles: each of 4 classes has 250 expected, sd ~13.7; tolerance 60
    assert np.all(np.abs(np.bincount(prof, minlength=4) - 250) < 60)


def test_responses_follow_the_model():
    rm, truth, q = sl.simulate_lcdm(
        seed=4, n_persons=20000, q_matrix=np.array([[0, 0], [1, 0], [0, 1], [1, 1]]), n_items=4
    )
    prof = truth[truth.parameter == "profile"].value.to_numpy().astype(int)
    y = rm.responses
    # item measuring a1 only: non-masters ~ sigmoid(-1.1) = 0.25, masters ~ sigmoid(1.9) = 0.87
    has_a1 = sl.profiles(2)[prof][:, 0] == 1
    assert abs(y[~has_a1, 1].mean() - 0.25) < 0.02 and abs(y[has_a1, 1].mean() - 0.87) < 0.02
    # item with both: only masters of both reach sigmoid(-1.1 + 3 + 0.5) = 0.92
    both = prof == 3
    assert abs(y[both, 3].mean() - 0.917) < 0.02 and abs(y[prof == 1, 3].mean() - 0.6) < 0.03


def test_determinism_and_bad_input():
    a = sl.simulate_lcdm(seed=9, n_persons=50)
    b = sl.simulate_lcdm(seed=9, n_persons=50)
    assert np.array_equal(a[0].responses, b[0].responses) and a[1].equals(b[1])
    with pytest.raises(ValueError, match="q_matrix must be"):
        sl.simulate_lcdm(seed=0, q_matrix=np.ones((3, 2)))
    with pytest.raises(ValueError, match="profile_probabilities"):
        sl.simulate_lcdm(seed=0, profile_probabilities=[0.5, 0.5])


def test_interactions_relative_to_main_effects_keep_items_monotone():
    # the larger design's rule: interactions U(-min main effect, 2); every item monotone
    q = np.array([[1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 0, 1]] * 20)
    _, truth, _ = sl.simulate_lcdm(
        seed=5,
        n_persons=10,
        n_attributes=4,
        n_items=len(q),
        q_matrix=q,
        intercept=(-3.0, -0.1),
        main_multi=(1.0, 5.0),
        interaction=(None, 2.0),
    )
    beta = truth[truth.parameter == "beta"]
    lows = []
    for j in range(len(q)):
        b = beta[beta.item == j].set_index("feature").value
        mains = b[[f for f in b.index if f != "intercept" and ":" not in f]]
        inter = b[[f for f in b.index if ":" in f]].iloc[0]
        assert -mains.min() <= inter <= 2.0
        lows.append(inter < 0)
    assert any(lows)  # the range reaches below 0, not the seed's fixed positive interval
