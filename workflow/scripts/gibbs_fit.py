"""A block of replications of one gibbs_2pno condition fitted by one method (gibbs, gibbs_omit,
gibbs_seed or nuts; rule fit_gibbs_2pno): the Gibbs samplers sweep every replication's chains in one program,
NUTS fits them one after another. Every fit's files go to rep<r>/ in the block's folder, where
the rules after it read them."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records, runtime
from bayesirt.studies import fit_tables, model_checks
from bayesirt.studies.gibbs_2pno.conditions import Condition
from bayesirt.studies.gibbs_2pno.settings import Settings

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
if w.method != "nuts":  # the Gibbs samplers' sums over persons run faster in YNNPACK
    runtime.use_library_reductions()
# the fitting code (JAX) after the XLA flag above is set
from bayesirt.studies.gibbs_2pno import methods  # noqa: E402  (JAX reads the setting above)

block = []
for rep, seed, responses, truth in zip(
    snakemake.params.reps, snakemake.params.seeds, snakemake.input.responses, snakemake.input.truth, strict=True
):
    cond = Condition(w.design, w.missing, w.method, int(rep))
    block.append(methods.Replication(io.read_responses(responses), pd.read_csv(truth), cond, seed))
outs = methods.fit_block(block, Settings.from_config(snakemake.config))
for rep, out in zip(block, outs, strict=True):
    if not out.record["converged"]:
        log.warning(
            "%s: chains not converged by the record's rule: %s", rep.cond.folder, out.record["convergence_reason"]
        )
    log.info("%s: %s; timing %s", rep.cond.folder, out.record["evaluation"], out.record["timing"])
    folder = Path(snakemake.output[0]) / f"rep{rep.cond.rep}"
    records.write_fit(out, folder)
    fit_tables.write(folder, rep.responses)
    model_checks.write(folder, rep.responses)
