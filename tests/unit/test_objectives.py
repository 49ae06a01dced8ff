"""Imputation-aware objectives: layout, special cases (seed 5.5), Jensen orderings, M -> inf limit.

All on fixed parameters and fixed keys; tolerances are stated next to each assertion.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesirt.inference.variational import missing_cells, missing_log_lik
from bayesirt.inference.variational import objectives as obj
from bayesirt.io import Item, ResponseMatrix
from bayesirt.models import factorized_grm as fgrm
from bayesirt.models import grm


def small_problem(n=40, seed=0, missing_rate=0.3, n_categories=(4, 4, 2, 3, 4, 4)):
    """Responses from a factorized GRM (items with 2..4 categories, 2 scales), throwaway MCAR
    (numpy, cells set to -1), random imputation PMFs, and parameters near the truth."""
    rng = np.random.default_rng(seed)
    n_items = len(n_categories)
    kmax = max(n_categories)
    items = [Item(f"X{i}", k, "A" if i < n_items // 2 else "B") for i, k in enumerate(n_categories)]
    st = fgrm.Structure(
        jnp.asarray([0] * (n_items // 2) + [1] * (n_items - n_items // 2)), jnp.asarray(n_categories), 2, kmax
    )
    params = {
        "discrimination": jnp.asarray(rng.uniform(0.8, 2.0, n_items), jnp.float32),
        "base_difficulty": jnp.asarray(rng.uniform(-1.5, -0.5, n_items), jnp.float32),
        "increments": jnp.asarray(rng.uniform(0.5, 1.0, (n_items, kmax - 2)), jnp.float32),
        "ability": jnp.asarray(rng.normal(size=(n, 2)), jnp.float32),
    }
    y = np.array(grm.sample(jax.random.key(seed), *fgrm.cell_terms(params, st), st.n_categories))
    full = y.copy()
    y[rng.random(y.shape) < missing_rate] = -1
    rm = ResponseMatrix(y.astype(np.int16), items)
    persons, cols = np.nonzero(y < 0)
    pmf = rng.dirichlet(np.ones(kmax), persons.size)
    pmf[np.arange(kmax)[None] >= np.asarray(n_categories)[cols][:, None]] = 0.0
    pmf /= pmf.sum(-1, keepdims=True)
    extra = obj.imputation_data(y, persons, cols, pmf, rm.n_categories)
    batch = {"y": jnp.asarray(y, jnp.int32), **extra}
    return rm, st, params, batch, (persons, cols, pmf), full


def test_layout_holds_every_missing_cell_once():
    rm, st, params, batch, (persons, cols, pmf), _ = small_problem()
    cells = batch[obj.SHARED][obj.CELLS]
    person, item = np.asarray(cells.person), np.asarray(cells.item)
    count, start = np.asarray(batch["miss_count"]), np.asarray(batch["miss_start"])
    assert person.size == persons.size and np.all(np.diff(person) >= 0)
    assert count.tolist() == (rm.responses < 0).sum(1).tolist()
    assert np.array_equal(start, np.cumsum(count) - count)
    assert np.array_equal(person, np.repeat(np.arange(rm.n_persons), count))
    assert cells.batch_cap[5] == np.sort(count)[::-1][:5].sum() and cells.batch_cap[-1] == persons.size
    assert cells.blocks  # 6 items, 30% MCAR: the per-item blocks are used for the full batch
    b_person, b_valid = np.asarray(cells.block_person), np.asarray(cells.block_valid)
    assert b_valid.sum() == persons.size
    for p, c, q in zip(persons, cols, pmf):
        row = np.nonzero((person == p) & (item == c))[0]
        assert row.size == 1
        np.testing.assert_allclose(np.asarray(cells.pmf)[row[0]], q, rtol=1e-6, atol=1e-7)
        cdf = np.asarray(cells.cdf)[row[0]]
        assert np.all(cdf[rm.n_categories[c] - 1 :] == 1.0)  # exactly one from the last category on
        slot = np.nonzero(b_valid[c] & (b_person[c] == p))[0]
        assert slot.size == 1
        np.testing.assert_allclose(np.asarray(cells.block_pmf)[c, slot[0]], q, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(np.asarray(cells.block_cdf)[c, slot[0]], cdf)


def test_bad_pmfs_are_refused():
    rm, st, params, batch, (persons, cols, pmf), _ = small_problem()
    y = rm.responses
    with pytest.raises(ValueError, match="exactly the missing cells"):
        obj.imputation_data(y, persons[1:], cols[1:], pmf[1:], rm.n_categories)
    bad = pmf.copy()
    bad[0, 0] = -0.1
    with pytest.raises(ValueError, match="non-negative"):
        obj.imputation_data(y, persons, cols, bad, rm.n_categories)
    with pytest.raises(ValueError, match="shape"):
        obj.imputation_data(y, persons, cols, pmf[:, :2], rm.n_categories)
    with pytest.raises(ValueError, match="unknown objective"):
        obj.make("average", None)
    with pytest.raises(ValueError, match="positive integer"):
        obj.naive_average(None, 0)


def test_draws_follow_the_pmf():
    # 20,000 draws of one cell; each category frequency within 4 binomial sds of its probability
    q = np.array([0.1, 0.0, 0.6, 0.3])
    cdf = jnp.asarray(np.cumsum(q)[None, :-1], jnp.float32)
    draws = missing_log_lik.draw_imputations(jax.random.key(1), cdf, 20000)
    assert draws.shape == (20000, 1)
    freq = np.bincount(np.asarray(draws).ravel(), minlength=4) / 20000
    sd = np.sqrt(q * (1 - q) / 20000)
    assert np.all(np.abs(freq - q) <= 4 * sd + 1e-12)
    assert freq[1] == 0.0


def test_log_mixture_prob_matches_log_space_reference():
    # against logsumexp(log q + category_log_probs), also for extreme abilities; abs tol 2e-4
    rm, st, params, batch, (persons, cols, pmf), _ = small_problem(n=200, seed=3)
    for scale in (1.0, 4.0):
        p = dict(params, ability=params["ability"] * scale)
        score, cuts = fgrm.cell_terms(p, st)
        ref_lp = grm.category_log_probs(score, cuts, st.n_categories)  # (N, I, K)
        q = jnp.asarray(pmf, jnp.float32)
        ref = jax.nn.logsumexp(jnp.log(q) + ref_lp[persons, cols], -1)
        k = jnp.arange(cuts.shape[-1])
        cuts_inf = jnp.where(k[None] >= (st.n_categories - 1)[:, None], 1e4, cuts)
        got = grm.log_mixture_prob(q, score[persons, cols], cuts_inf, item=jnp.asarray(cols))
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), atol=2e-4)


def test_no_missing_falls_through_exactly():
    rm, st, params, _, _, full = small_problem()
    extra = obj.imputation_data(full, np.zeros(0, int), np.zeros(0, int), np.zeros((0, 4)), rm.n_categories)
    batch = {"y": jnp.asarray(full, jnp.int32), **extra}
    ref = np.asarray(obj.zero_fill(st)(params, batch, jax.random.key(0)))
    for name in obj.NAMES:
        got = np.asarray(obj.make(name, st, 3)(params, batch, jax.random.key(0)))
        assert np.array_equal(got, ref), name


def test_single_copy_is_single_imputation_exactly():
    rm, st, params, batch, _, _ = small_problem()
    key = jax.random.key(5)
    naive = np.asarray(obj.naive_average(st, 1)(params, batch, key))
    rb = np.asarray(obj.rao_blackwell(st, 1)(params, batch, key))
    rb_batch = np.asarray(obj.rao_blackwell(st, 1, per="batch")(params, batch, key))
    cell_probs = obj.factorized_cell_probs(st)
    single = np.asarray(
        obj.zero_fill(st)(params, batch, key)
        + missing_log_lik.copies_missing_log_lik(key, params, batch, cell_probs, 1)[0]
    )
    assert np.array_equal(naive, single) and np.array_equal(rb, single) and np.array_equal(rb_batch, single)


def test_persons_without_missing_cells_are_unchanged_exactly():
    rm, st, params, batch, _, _ = small_problem()
    complete = np.asarray(batch["miss_count"]) == 0
    assert complete.any()
    ref = np.asarray(obj.zero_fill(st)(params, batch, None))
    for name in ("naive_average", "rao_blackwell", "exact_marginal"):
        got = np.asarray(obj.make(name, st, 4)(params, batch, jax.random.key(2)))
        assert np.array_equal(got[complete], ref[complete]), name


@pytest.mark.parametrize("ability_scale", [1.0, 5.0])
def test_missing_cells_score_the_imputed_categories(ability_scale):
    # one copy: sum of log P(imputed category) against category_log_probs (log space), abs tol
    # 1e-4, also for abilities scaled x5 (imputed categories far in the tails)
    rm, st, params, batch, _, _ = small_problem()
    params = dict(params, ability=params["ability"] * ability_scale)
    key = jax.random.key(11)
    view = missing_cells.batch_cells(batch, batch[obj.SHARED][obj.CELLS])
    y_imp = np.asarray(missing_log_lik.draw_imputations(key, view.cdf, 1)[0])
    valid = np.ones(y_imp.shape, bool) if view.valid is None else np.asarray(view.valid)
    persons = np.broadcast_to(np.asarray(view.persons), y_imp.shape)
    items = np.broadcast_to(np.asarray(view.items), y_imp.shape)
    lp = np.asarray(grm.category_log_probs(*fgrm.cell_terms(params, st), st.n_categories))
    expected = np.zeros(rm.n_persons)
    for p, i, k in zip(persons[valid], items[valid], y_imp[valid]):
        expected[p] += lp[p, i, k]
    got = np.asarray(missing_log_lik.copies_missing_log_lik(key, params, batch, obj.factorized_cell_probs(st), 1)[0])
    np.testing.assert_allclose(got, expected, atol=1e-4)


@pytest.mark.parametrize("seed", [0, 1])
def test_naive_average_below_rao_blackwell_per_person_and_batch(seed):
    # Jensen on the same copies (same key): exact inequality up to float32 rounding (1e-4)
    rm, st, params, batch, _, _ = small_problem(seed=seed)
    for m in (2, 8):
        key = jax.random.key(100 + m)
        naive = np.asarray(jax.jit(obj.naive_average(st, m))(params, batch, key))
        rb = np.asarray(jax.jit(obj.rao_blackwell(st, m))(params, batch, key))
        rb_batch = np.asarray(jax.jit(obj.rao_blackwell(st, m, per="batch"))(params, batch, key))
        assert np.all(naive <= rb + 1e-4)
        assert naive.sum() <= rb_batch.sum() + 1e-4


def test_expected_rao_blackwell_below_exact_and_converging():
    # Monte Carlo over 400 keys (seed 7): E[naive] <= E[RB_M] <= exact for M in 1, 4, 32 with
    # a tolerance of 3 Monte Carlo standard errors; the gap to exact shrinks with M and is
    # below 0.05 nats per person at M = 32.
    rm, st, params, batch, _, _ = small_problem(n=20, seed=4, missing_rate=0.25)
    exact = float(obj.exact_marginal(st)(params, batch, None).sum())
    keys = jax.random.split(jax.random.key(7), 400)
    gaps = []

    # Parameters and data go in as arguments: jax 0.6.2's XLA CPU constant folding returns
    # wrong values for a gather times a constant when every operand is a closure constant.
    def mc(objective):
        f = jax.jit(jax.vmap(lambda k, p, b: objective(p, b, k).sum(), in_axes=(0, None, None)))
        return np.asarray(f(keys, params, batch), np.float64)

    for m in (1, 4, 32):
        vals = mc(obj.rao_blackwell(st, m))
        mean, se = vals.mean(), vals.std() / np.sqrt(vals.size)
        assert mean <= exact + 3 * se + 1e-3
        gaps.append(exact - mean)
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 0.05 * rm.n_persons
    vb = mc(obj.rao_blackwell(st, 4, per="batch"))
    assert vb.mean() <= exact + 3 * vb.std() / np.sqrt(vb.size) + 1e-3


def test_importance_weighted_tends_to_the_observed_data_likelihood():
    # Dividing each copy by its imputation probability makes exp(missing part) an unbiased
    # estimate of 1 for any parameters: the objective is zero-fill's plus a term that is 0 in the
    # limit. Imputation PMFs half the model's own probabilities and half random (so that every
    # weight is below 2 per cell and the Monte Carlo mean has a finite variance). Over 200 keys
    # (seed 11): the mean weight of each person is 1 within 4 standard errors; at M = 512 the
    # missing part is 0 within 4 of its standard errors (the weights' variance over 512, by the
    # delta method) for every person, and the gradient of the item parameters is nearer to
    # zero-fill's than rao_blackwell's (the seed's target) is, by a factor over 3
    rm, st, params, batch, (persons, cols, pmf), _ = small_problem(n=20, seed=5, missing_rate=0.25)
    model = np.asarray(obj.factorized_cell_probs(st)(params, jnp.asarray(persons), jnp.asarray(cols)), np.float64)
    pmf = 0.5 * model / model.sum(-1, keepdims=True) + 0.5 * pmf
    batch = {"y": batch["y"], **obj.imputation_data(np.asarray(batch["y"]), persons, cols, pmf, rm.n_categories)}
    zero = np.asarray(obj.zero_fill(st)(params, batch, None))
    keys = jax.random.split(jax.random.key(11), 200)
    weights = jax.jit(jax.vmap(lambda k, p, b: obj.importance_weighted(st, 1)(p, b, k), in_axes=(0, None, None)))
    w = np.exp(np.asarray(weights(keys, params, batch), np.float64) - zero)  # (keys, persons)
    has_cells = np.asarray(batch["miss_count"]) > 0
    assert has_cells.sum() >= 10
    mean, se = w.mean(0), w.std(0) / np.sqrt(w.shape[0])
    assert np.all(np.abs(mean[has_cells] - 1) <= 4 * se[has_cells] + 1e-3), (mean, se)
    big = np.asarray(jax.jit(obj.importance_weighted(st, 512))(params, batch, jax.random.key(3)))
    assert np.all(np.abs(big - zero) <= 4 * np.sqrt(w.var(0) / 512) + 1e-3)

    def grad(f):
        g = jax.jit(jax.grad(lambda p, b: f(p, b, jax.random.key(3)).sum()))(params, batch)
        return np.concatenate([np.ravel(g[k]) for k in ("discrimination", "base_difficulty")])

    g_zero = grad(obj.zero_fill(st))
    gap_iw = np.abs(grad(obj.importance_weighted(st, 512)) - g_zero).max()
    gap_rb = np.abs(grad(obj.rao_blackwell(st, 512)) - g_zero).max()
    assert gap_iw * 3 < gap_rb, (gap_iw, gap_rb)


def test_gradients_are_finite_for_every_objective():
    rm, st, params, batch, _, _ = small_problem(n=30, seed=6)
    for name in obj.NAMES:
        f = obj.make(name, st, 3)
        g = jax.jit(jax.grad(lambda p, b: f(p, b, jax.random.key(0)).sum()))(params, batch)  # noqa: B023  (used within this iteration only)
        for k, v in g.items():
            assert np.all(np.isfinite(np.asarray(v))), (name, k)


def test_plugs_into_the_fit_routine():
    # a short ADVI run (minibatches of 20) with a copies objective: runs, finite loss and ELBO
    from bayesirt.inference.execution.training import TrainSettings
    from bayesirt.studies import grm_advi

    rm, st, params, batch, (persons, cols, pmf), _ = small_problem(n=60, seed=8)
    extra = {k: batch[k] for k in obj.KEYS}
    settings = TrainSettings(max_steps=20, min_steps=20, check_every=10, window=5, progress_every=0, batch_size=20)
    out = grm_advi.fit(
        rm,
        seed=0,
        settings=settings,
        priors=fgrm.Priors(),
        log_likelihood=obj.make("rao_blackwell", st, 2),
        extra_data=extra,
        posterior_draws=20,
    )
    assert np.isfinite(out.losses["loss"]).all() and out.record["steps"] == 20
    assert np.isfinite(out.record["elbo"])


def test_cumulative_forms_match_log_space_for_every_category():
    # grm.cumulative_probs + log_prob_from_cumulative against category_log_probs, every category,
    # scores from -12 to 12 (tails down to ~1e-10), items with 2..5 categories: abs tol 2e-4
    cuts = jnp.asarray(
        [[-1.0, 0.5, 1.5, 3.0], [-0.5, 1e4, 1e4, 1e4], [0.0, 0.3, 1e4, 1e4], [-2.0, -1.9, 2.0, 2.1]], jnp.float32
    )
    n_cat = jnp.asarray([5, 2, 3, 5])
    score = jnp.linspace(-12, 12, 97)[:, None] * jnp.ones((1, 4))
    ref = np.asarray(grm.category_log_probs(score, jnp.minimum(cuts, 50.0), n_cat))
    s, t = grm.cumulative_probs(score, cuts[None].repeat(97, 0))
    for k in range(5):
        got = np.asarray(grm.log_prob_from_cumulative(jnp.full(score.shape, k), s, t))
        ok = k < np.asarray(n_cat)
        np.testing.assert_allclose(got[:, ok], ref[:, ok, k], atol=2e-4)


def _minibatch(batch, idx):
    """The batch the training driver builds for persons ``idx``: person arrays sliced, shared whole."""
    out = {k: (v if k == obj.SHARED else v[idx]) for k, v in batch.items()}
    return dict(out, index=jnp.asarray(idx))


def _point_mass_problem(seed=0, lopsided=False):
    """small_problem with one-hot imputation PMFs (copies are then deterministic, so every
    objective equals exact_marginal); ``lopsided`` puts most missing cells on one item, so the
    per-item blocks would waste too much and the flat list is used for the full batch too."""
    rm, st, params, batch, (persons, cols, pmf), full = small_problem(n=50, seed=seed)
    y = np.asarray(batch["y"])
    if lopsided:
        y = full.copy()
        rng = np.random.default_rng(seed)
        y[rng.random(y.shape[0]) < 0.7, 0] = -1
        y[rng.integers(0, y.shape[0], 3), 1] = -1
    persons, cols = np.nonzero(y < 0)
    kmax = st.max_categories
    onehot = np.eye(kmax)[np.minimum(full[persons, cols], kmax - 1)]
    extra = obj.imputation_data(y, persons, cols, onehot, rm.n_categories)
    return st, params, {"y": jnp.asarray(y, jnp.int32), **extra}


@pytest.mark.parametrize("lopsided", [False, True])
def test_minibatches_agree_with_the_full_batch(lopsided):
    # same persons, full batch vs minibatches (shuffled, of several sizes): equal up to float32
    # rounding (abs 1e-4); with point-mass PMFs every copies objective equals exact_marginal
    st, params, batch = _point_mass_problem(seed=2, lopsided=lopsided)
    assert batch[obj.SHARED][obj.CELLS].blocks == (not lopsided)
    n = batch["y"].shape[0]
    key = jax.random.key(0)
    full = {
        name: np.asarray(jax.jit(obj.make(name, st, 3))(params, dict(batch, index=jnp.arange(n)), key))
        for name in obj.NAMES
    }
    for name in ("naive_average", "rao_blackwell"):
        np.testing.assert_allclose(full[name], full["exact_marginal"], atol=1e-4)
    perm = np.random.default_rng(1).permutation(n)
    # a single person, and a batch of several (each size compiles every objective once)
    for size in (1, 20):
        idx = perm[:size]
        p = dict(params, ability=params["ability"][idx])
        for name in obj.NAMES:
            got = np.asarray(jax.jit(obj.make(name, st, 3))(p, _minibatch(batch, idx), key))
            want = full[name][idx]
            if name in ("rao_blackwell_batch", "rao_blackwell_seed"):  # one value for the batch, spread evenly
                missing = full["exact_marginal"][idx] - full["zero_fill"][idx]
                want = full["zero_fill"][idx] + missing.sum() / size
            np.testing.assert_allclose(got, want, atol=1e-4, err_msg=f"{name}, batch of {size}")


def test_full_batch_layouts_agree():
    # per-item blocks and the flat list give the same exact marginal and, per copy, the same
    # log-likelihood of the same imputed categories (point masses), up to rounding (abs 1e-4)
    st, params, batch = _point_mass_problem(seed=3)
    cells = batch[obj.SHARED][obj.CELLS]
    flat = dict(batch, **{obj.SHARED: {obj.CELLS: dataclasses.replace(cells, blocks=False)}})
    key = jax.random.key(4)
    for name in obj.NAMES:
        f = jax.jit(obj.make(name, st, 2))
        np.testing.assert_allclose(np.asarray(f(params, batch, key)), np.asarray(f(params, flat, key)), atol=1e-4)


@pytest.mark.parametrize("layout", ["blocks", "flat", "minibatch"])
def test_exact_marginal_gradient_matches_finite_differences(layout):
    # float64: directional derivatives along 3 random directions against central differences
    # (step 1e-5): relative error below 1e-6
    with jax.enable_x64(True):
        rm, st, params, batch, _, _ = small_problem(n=30, seed=9)
        params = {k: jnp.asarray(v, jnp.float64) for k, v in params.items()}
        cells = batch[obj.SHARED][obj.CELLS]
        if layout == "flat":
            batch = dict(batch, **{obj.SHARED: {obj.CELLS: dataclasses.replace(cells, blocks=False)}})
        if layout == "minibatch":
            idx = np.arange(3, 20)
            batch = _minibatch(batch, idx)
            params = dict(params, ability=params["ability"][idx])
        f = obj.exact_marginal(st)
        loss = jax.jit(lambda p: f(p, batch, None).sum())
        grad = jax.jit(jax.grad(lambda p: f(p, batch, None).sum()))(params)
        rng = np.random.default_rng(0)
        for _ in range(3):
            d = {k: jnp.asarray(rng.normal(size=v.shape)) for k, v in params.items()}
            eps = 1e-5
            plus = loss({k: params[k] + eps * d[k] for k in params})
            minus = loss({k: params[k] - eps * d[k] for k in params})
            fd = float(plus - minus) / (2 * eps)
            an = sum(float(jnp.sum(grad[k] * d[k])) for k in params)
            assert abs(fd - an) <= 1e-6 * max(abs(an), 1.0), (fd, an)


def test_category_probs_accurate_and_differentiated_exactly():
    # products form against the log-space reference for scores -30..30 (abs 1e-5 in log), zero
    # beyond an item's categories, and its hand-written backward pass against autodiff of the
    # same formula (rel 1e-5)
    cuts = jnp.asarray(
        [[-1.0, 0.5, 1.5, 3.0], [-0.5, 1e4, 1e4, 1e4], [0.0, 0.3, 1e4, 1e4], [-2.0, -1.9, 2.0, 2.1]], jnp.float32
    )
    n_cat = jnp.asarray([5, 2, 3, 5])
    score = jnp.linspace(-30, 30, 241)[:, None] * jnp.ones((1, 4))
    ref = np.asarray(grm.category_log_probs(score, jnp.minimum(cuts, 50.0), n_cat))
    e, gap = grm.exp_cut_tables(cuts, n_cat)
    item = jnp.tile(jnp.arange(4), 241)
    top = grm.top_category_mask(n_cat[item], 5)
    p = np.asarray(grm.category_probs(score.reshape(-1), e[item], gap[item], top)).reshape(241, 4, 5)
    ok = np.arange(5)[None] < np.asarray(n_cat)[:, None]
    np.testing.assert_allclose(np.log(p[:, ok]), ref[:, ok], atol=1e-5)
    assert np.all(p[:, ~ok] == 0.0)

    def plain(s, e, gap, top):
        v = jnp.exp(-jnp.clip(s, -40.0, 40.0))[..., None]
        sk = 1.0 / (1.0 + e * v)
        return sk[..., :-1] * (top + gap * v * sk[..., 1:])

    w = jnp.asarray(np.random.default_rng(0).normal(size=(4, 60, 5)), jnp.float32)
    s = jnp.linspace(-6, 6, 240).reshape(4, 60)
    args = (s, e[:, None], gap[:, None], grm.top_category_mask(n_cat, 5)[:, None])  # broadcast tables
    for fn in (grm.category_probs, plain):
        assert fn(*args).shape == (4, 60, 5)
    g1 = jax.grad(lambda *a: jnp.sum(w * jnp.log(grm.category_probs(*a) + 1e-30)), argnums=(0, 1, 2))(*args)
    g2 = jax.grad(lambda *a: jnp.sum(w * jnp.log(plain(*a) + 1e-30)), argnums=(0, 1, 2))(*args)
    for a, b in zip(g1, g2):
        assert a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5 * float(jnp.abs(b).max()))


def test_uniform_at_gives_the_numbers_of_jax_uniform():
    # exactly (bit for bit): the numbers jax.random.uniform has at given flat positions of its
    # shape, for typed and raw keys, and under vmap with a key per fit
    from bayesirt.inference.variational.missing_cells import uniform_at

    key = jax.random.fold_in(jax.random.key(3), 7)
    for shape in ((5,), (3, 7), (2, 4, 6)):
        want = np.asarray(jax.random.uniform(key, shape))
        positions = np.arange(int(np.prod(shape))).reshape(shape)
        assert np.array_equal(np.asarray(jax.jit(uniform_at)(key, positions)), want)
        some = np.random.default_rng(0).permutation(positions.size)[:4]
        assert np.array_equal(np.asarray(uniform_at(jax.random.key_data(key), some)), want.ravel()[some])
    keys = jax.random.split(jax.random.key(1), 3)
    batched = jax.jit(jax.vmap(uniform_at, in_axes=(0, None)))(keys, np.arange(12))
    for k, got in zip(keys, batched, strict=True):
        assert np.array_equal(np.asarray(got), np.asarray(jax.random.uniform(k, (12,))))


def test_a_block_layout_keeps_every_fit_s_values_and_draws():
    from bayesirt.inference.execution.bulk_group import stack

    # three fits with different masks (two with item blocks, one with the flat list) padded to
    # one layout (block_data): each objective's values, full batch and minibatch, and alone or
    # vmapped over the fits with a key each, equal the fit's own up to float32 rounding (abs
    # 1e-5; the padded cells are masked and every cell draws the uniforms of its own layout)
    problems = [small_problem(n=50, seed=s, missing_rate=r) for s, r in ((0, 0.3), (1, 0.3), (2, 0.05))]
    own = [batch for _, _, _, batch, _, _ in problems]
    padded = obj.block_data(own)
    cells = [d[obj.SHARED][obj.CELLS] for d in padded]
    assert [c.blocks for c in (d[obj.SHARED][obj.CELLS] for d in own)] == [True, True, False]
    assert all(c.padded and not c.blocks for c in cells) and len({c.n_cells for c in cells}) == 1
    assert len({c.batch_cap for c in cells}) == 1
    assert obj.block_data(own[:1])[0] is own[0] and obj.block_data([own[0], own[0]])[1] is own[0]  # nothing to pad
    st, n, key = problems[0][1], 50, jax.random.key(5)
    idx = np.arange(3, 20)
    for name in obj.NAMES:
        f = jax.jit(obj.make(name, st, 3))
        for (_, _, params, batch, _, _), pad in zip(problems, padded, strict=True):
            full = dict(batch, index=jnp.arange(n))
            np.testing.assert_allclose(f(params, dict(pad, index=jnp.arange(n)), key), f(params, full, key), atol=1e-5)
            p = dict(params, ability=params["ability"][idx])
            np.testing.assert_allclose(f(p, _minibatch(pad, idx), key), f(p, _minibatch(batch, idx), key), atol=1e-5)
        keys = jax.random.split(key, 3)
        params = stack([p for _, _, p, _, _, _ in problems])
        one = lambda p, d, k, f=f: f(p, dict(d, index=jnp.arange(n)), k)
        vmapped = jax.jit(jax.vmap(one))(params, stack(padded), keys)
        for i, (_, _, p, batch, _, _) in enumerate(problems):
            np.testing.assert_allclose(vmapped[i], f(p, dict(batch, index=jnp.arange(n)), keys[i]), atol=1e-5)
