"""A block of one condition's replications of a vibo design, fitted by one method and each
evaluated (rule fit_vibo); every replication's files go to rep<r>/ in the block's folder, where
the rules after it read them."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records
from bayesirt.studies import fit_tables, model_checks
from bayesirt.studies.vibo import methods
from bayesirt.studies.vibo.conditions import Condition
from bayesirt.studies.vibo.settings import Settings

log = logs.to_file(snakemake.log[0])
w, i, p = snakemake.wildcards, snakemake.input, snakemake.params
block = [
    methods.Replication(
        io.read_responses(responses),
        pd.read_csv(hidden),
        io.read_responses(holdout),
        pd.read_csv(truth),
        Condition(w.design, w.missing, w.method, int(rep)),
        seed,
    )
    for rep, seed, responses, hidden, holdout, truth in zip(
        p.reps, p.seeds, i.responses, i.hidden, i.holdout, i.truth, strict=True
    )
]
outs = methods.fit_block(block, Settings.from_study(p.study))
for rep, out in zip(block, outs, strict=True):
    if not out.record["converged"]:
        log.warning("rep%d did not converge: %s", rep.cond.rep, out.record["convergence_reason"])
    log.info("%s: %s", rep.cond.folder, out.record["evaluation"])
    folder = Path(snakemake.output[0]) / f"rep{rep.cond.rep}"
    records.write_fit(out, folder)
    fit_tables.write(folder, rep.train)
    model_checks.write(folder, rep.train)
