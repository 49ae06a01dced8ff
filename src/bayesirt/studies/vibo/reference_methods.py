"""The vibo study's reference methods, each fitted one replication after the other (also in a
block): marginal maximum likelihood by quadrature with EAP abilities (the point-estimate
anchor, with the standard errors of its observed information) and NUTS on the joint posterior
of items and abilities (the reference posterior). ``methods`` registers them beside the
variational methods and evaluates them alike (``evaluation``)."""

from __future__ import annotations

import time
from dataclasses import asdict

import jax
import jax.numpy as jnp
import numpy as np

from bayesirt import io, records
from bayesirt.inference.marginal import mml, mml_information, mml_posterior
from bayesirt.inference.samplers.sampling import SamplerSettings
from bayesirt.inference.variational import vibo_programs
from bayesirt.models import irt2pl
from bayesirt.studies.base import MethodResult
from bayesirt.studies.vibo.evaluation import Fitted, Prepared, evaluated, item_estimates

# The observed information costs about one pass over the data per free item parameter; above
# this many person-parameter products (the paper's 1,000,000 persons x 200 parameters) the MML
# fit keeps no standard errors, and its record says so.
MML_SE_MAX_WORK = 5e7


def mml_standard_errors(y, res, cats):
    """Standard errors of an MML fit's item parameters (``inference.marginal.mml_information``) and how
    they were had; nan, with the reason, where the fit is too large or not at a maximum."""
    n_free = int(np.sum(mml_information.free_mask(np.broadcast_to(cats, (y.shape[1],)), res.cuts.shape[1] + 1)))
    nan = mml_information.ItemStandardErrors(
        np.full(res.discrimination.shape, np.nan), np.full(res.cuts.shape, np.nan), None, None, np.nan
    )
    if y.shape[0] * n_free > MML_SE_MAX_WORK:
        return nan, f"not computed: {y.shape[0]} persons x {n_free} parameters is above {MML_SE_MAX_WORK:.0e}"
    try:
        se = mml_information.standard_errors(y, res.discrimination, res.cuts, mml.Structure(cats), n_nodes=41)
    except ValueError as err:
        return nan, f"not computed: {err}"
    return se, f"observed information (condition number {se.condition_number:.3g})"


def fit_mml(p: Prepared) -> MethodResult:
    """Marginal ML by quadrature with EAP abilities (the point-estimate anchor): 41 nodes for
    the fit, 61 for the person posteriors (with many items a posterior is narrow); the
    unidimensional GRM by the same quadrature (a 2PL item is a GRM item with 2 categories)."""
    y = p.y
    cats = list(p.st.categories) if p.st.model == "grm" else 2
    res = mml.fit(p.keys["fit"], y, mml.Structure(cats), mml.MMLSettings(n_nodes=41))
    se, how = mml_standard_errors(y, res, cats)
    items = {"discrimination": (res.discrimination, se.discrimination)}
    items.update(
        {"cut": (res.cuts, se.cuts)} if p.st.model == "grm" else {"difficulty": (res.cuts[:, 0], se.cuts[:, 0])}
    )
    _, ab_mean, ab_sd = mml_posterior.posterior(y, res.discrimination, res.cuts, cats, n_nodes=61)
    probs = mml_posterior.predictive_probs(y, res.discrimination, res.cuts, p.rows, p.cols, cats, n_nodes=61)
    t0 = time.perf_counter()
    mml_posterior.posterior(p.y_hold, res.discrimination, res.cuts, cats, n_nodes=61)
    timing = {"score_new_seconds": time.perf_counter() - t0}  # EAP of the new persons

    def make_record(f):
        return {
            **f,
            "standard_errors": how,
            "steps": res.iterations,
            "converged": res.converged,
            "convergence_reason": res.reason,
            "diverged_at_step": None,
            "final_loss": res.mean_nll,
            "versions": io.library_versions(),
            "device": io.device_info(),
            "timing": {"wall_seconds": res.wall_seconds, "compile_seconds": 0.0, **timing},
        }

    return evaluated(
        p,
        Fitted(items, (ab_mean, ab_sd), probs, make_record, losses=records.loss_table(res.loss_history), timing=timing),
    )


def fit_nuts(p: Prepared) -> MethodResult:
    """NUTS on the joint posterior of items and abilities (the reference posterior)."""
    from bayesirt.inference.samplers import nuts  # numpyro: imported on first use, not in every job

    ns, st, y = p.settings.nuts, p.st, p.y
    settings = SamplerSettings(
        n_chains=int(ns["n_chains"]), n_warmup=int(ns["n_warmup"]), n_samples=int(ns["n_samples"]), progress_every=0
    )
    init = dict(irt2pl.initial_items(y, st), ability=jnp.zeros((y.shape[0], 1)))
    res = nuts.run_nuts(
        p.keys["fit"],
        lambda q, data: irt2pl.log_joint(q, data["y"], st, p.priors),
        init,
        settings,
        data={"y": jnp.asarray(y)},
        label=p.cond.folder,
    )
    post = res.idata.posterior
    theta = post["ability"].values  # chain, draw, person, 1
    flat = lambda v: jnp.asarray(v.reshape((-1,) + v.shape[2:]))
    draw_items = {k: flat(post[k].values) for k in irt2pl.initial_items(y, st)}
    constrained = jax.vmap(lambda d: irt2pl.constrain(d, st))(draw_items)  # every draw, constrained
    pairs = {k: (np.asarray(v).mean(0), np.asarray(v).std(0)) for k, v in constrained.items()}
    block = "cuts" if st.model == "grm" else "difficulty"
    items = item_estimates(st, {"discrimination": pairs["discrimination"], block: pairs[block]})
    probs = vibo_programs.predictive_from_draws(draw_items, flat(theta), st, p.rows, p.cols)
    return evaluated(
        p,
        Fitted(
            items,
            (theta.mean((0, 1)), theta.std((0, 1))),
            probs,
            lambda f: records.sample_record(res, f),
            {"sampler": asdict(settings)},
            idata=res.idata,
        ),
    )
