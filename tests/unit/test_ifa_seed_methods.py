"""amortized_ifa's seed-as-written methods (iwae_seed, iwavb_seed): the seed's cyclical rate,
AdamW on every parameter, starting values and stopping rule, IWAVB without our additions, and a
tiny end-to-end block of each through the bulk path."""

import jax
import jax.numpy as jnp
import jsonschema
import numpy as np
import pytest
import yaml

from bayesirt.inference.execution.stopping import Stopper
from bayesirt.inference.execution.training import TrainSettings
from bayesirt.inference.variational import iwavb, iwavb_networks, networks, seed_training
from bayesirt.models import mgrm
from bayesirt.studies.amortized_ifa import conditions, data, methods, seed_methods, settings
from tests.unit.test_ifa_study import SCHEMAS, design, one_design


def test_cyclical_rate_is_a_triangle_between_the_base_and_five_times_it():
    rate = seed_training.cyclical_rate(1e-3, 5.0, 100)
    steps = jnp.asarray([0, 50, 100, 150, 200, 300])
    np.testing.assert_allclose(np.asarray(jax.vmap(rate)(steps)), [1e-3, 3e-3, 5e-3, 3e-3, 1e-3, 5e-3], rtol=1e-6)


def test_seed_adamw_decays_every_part_decoder_included():
    params = {"model": {"a": jnp.ones(3)}, "encoder": {"b": 2 * jnp.ones(2)}}
    opt = seed_training.optimizer(seed_training.SeedOptimizer(0.01, 5.0, 100), {"model": 0.1, "encoder": 0.2}, params)
    zeros = jax.tree.map(jnp.zeros_like, params)
    updates, _ = opt.update(zeros, opt.init(params), params)
    # with a zero gradient only the decoupled decay moves a parameter: -lr * lambda * theta
    np.testing.assert_allclose(updates["model"]["a"], -0.1 * 0.01 * 1.0, rtol=1e-5)
    np.testing.assert_allclose(updates["encoder"]["b"], -0.2 * 0.01 * 2.0, rtol=1e-5)


def test_best_rule_stops_patience_windows_after_the_last_new_best():
    s = TrainSettings(check_every=10, window=10, patience=3, min_steps=0, max_steps=1000, stopping="best")
    stopper = Stopper(s, n_persons=100)
    means = [5.0, 4.0, 3.0, 3.5, 3.1, 2.9, 3.0, 3.0, 3.2, 1.0]  # last new best at window 6
    stopped_at = next(i for i, m in enumerate(means) if stopper.update(np.full(10, m)))
    assert stopped_at == 8 and stopper.stop_reason == "no_new_best" and stopper.converged
    assert stopper.best == pytest.approx(2.9)


def test_seed_start_is_xavier_for_the_decoder_and_full_kaiming_for_the_networks():
    st = mgrm.structure([3] * 6, 2, None)
    cfg = iwavb.IWAVBSettings(encoder_form="seed", encoder_hidden=16, discriminator_hidden=(16, 8))
    params = seed_training.init(jax.random.key(0), st, iwavb.init(jax.random.key(1), st, cfg))
    xavier = np.sqrt(2.0 / (2 + 6))
    lam, ints = np.asarray(mgrm.loadings(params["model"], st)), np.asarray(mgrm.intercepts(params["model"], st))
    assert np.abs(lam).max() <= xavier and np.abs(ints).max() <= xavier + 1e-2
    assert (np.diff(np.asarray(mgrm.cuts(params["model"], st)), axis=1) > 0).all()
    last = params["discriminator"]["net"][-1]["w"]  # ours starts this layer at 1% of its scale
    assert np.abs(last).max() > 0.5 * np.sqrt(3.0 / last.shape[0])


def test_iwavb_seed_turns_off_our_additions():
    st = mgrm.structure([3] * 5, 1, None)
    cfg = seed_methods.iwavb_seed_settings(
        conditions.Condition("x", "iwavb_seed", 1, 7, 0), design(preset="mixture_p1", n_persons=50)
    )
    assert (cfg.encoder_form, cfg.quadratic_term, cfg.jacobian_in_weight, cfg.gauge_weight) == (
        "seed",
        False,
        False,
        0.0,
    )
    params = iwavb.init(jax.random.key(0), st, cfg)
    assert set(params["encoder"]) == {"net"}  # one network of [x, eps]: no trunk, head or noise branch
    y = jnp.asarray(np.random.default_rng(0).integers(0, 3, (4, 5)), jnp.int8)
    feats = networks.response_features(y, 3)
    eps = jax.random.normal(jax.random.key(2), (7, 4, 1))
    u, mu, log_sigma = iwavb_networks.encode(params["encoder"], feats, eps, cfg)
    z = networks.apply_mlp(
        params["encoder"]["net"], jnp.concatenate([jnp.broadcast_to(feats, (7, 4, feats.shape[-1])), eps], -1)
    )
    np.testing.assert_allclose(mu + jnp.exp(log_sigma) * u, z, atol=1e-5)  # standardised by the draws' own moments
    np.testing.assert_allclose(u.mean(0), 0.0, atol=1e-5)
    disc = dict(params["discriminator"], log_precision=jnp.ones(1))  # the quadratic term is not used
    t = iwavb_networks.discriminator(disc, feats, u, cfg)
    t_plain = networks.apply_mlp(
        disc["net"], jnp.concatenate([jnp.broadcast_to(feats, (7, 4, feats.shape[-1])), u], -1)
    )[..., 0]
    np.testing.assert_allclose(t, t_plain, atol=1e-5)
    # Algorithm 2's weight: log q = T - |z~|^2 / 2, no constant and no Jacobian
    np.testing.assert_allclose(
        iwavb_networks.log_q_from_t(t, u, log_sigma, jacobian=False), t - 0.5 * jnp.sum(u * u, -1), atol=1e-6
    )


@pytest.mark.parametrize("method", seed_methods.SEED_METHODS)
def test_a_tiny_block_of_a_seed_method_runs_end_to_end(method):
    d = design(
        preset="mixture_p1",
        n_persons=60,
        simulate={"standardize_mixture": False},  # the seed's scale
        seed_training={
            "batch_size": 30,
            "window": 5,
            "patience": 2,
            "max_steps": 40,
            "half_cycle": 10,
            "progress_every": 0,
        },
        iwae_seed={"hidden": [8]},
        iwavb_seed={"encoder_hidden": 8, "discriminator_hidden": [8]},
    )
    evaluation = settings.Evaluation(heldout_fraction=0.25, eval_samples=20, posterior_draws=5)
    reps = []
    for r in range(2):
        train, hold, truth = data.simulate_design(d, r, 0.25)
        reps.append(methods.Replication(train, hold, truth, conditions.Condition(d.name, method, 1, 3, r), 10 + r))
    for out in methods.fit_block(reps, one_design(d, evaluation)):
        rec = out.record
        jsonschema.validate(rec, yaml.safe_load((SCHEMAS / "fit_record.schema.yaml").read_text()))
        assert rec["method"] == method and rec["block"]["size"] == 2
        assert rec["stop_reason"] in ("no_new_best", "max_steps") and rec["converged"] == (
            rec["stop_reason"] == "no_new_best"
        )
        train_cfg = rec["settings"]["training"]
        assert (train_cfg["stopping"], train_cfg["window"], train_cfg["check_every"], train_cfg["patience"]) == (
            "best",
            5,
            5,
            2,
        )
        assert rec["settings"]["method"]["seed"] == {"weight_decay": 0.01, "max_ratio": 5.0, "half_cycle": 10}
        assert np.isfinite(rec["heldout_loglik"]["own_proposal"]) and np.isfinite(rec["heldout_loglik"]["independent"])


def test_the_pages_pairs_of_ours_keep_replications_whose_seed_fit_is_missing():
    import pandas as pd

    from bayesirt.studies.amortized_ifa import reproduction

    fits = pd.DataFrame(
        {
            "design": ["normal_p5"] * 5,
            "rep": [0, 0, 0, 1, 1],
            "method": ["iwae", "iwavb", "iwae_seed", "iwae", "iwavb"],
            "loading_mse": [0.1, 0.2, 0.3, 0.4, 0.5],
        }
    )
    pairs = reproduction.per_replication(fits, "loading_mse")
    assert len(pairs) == 2 and list(pairs["iwavb"]) == [0.2, 0.5]
