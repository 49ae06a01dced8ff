"""One method on one condition of a vibo design, evaluated (rule fit_vibo)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records
from bayesirt.studies import fit_tables
from bayesirt.studies.vibo import methods
from bayesirt.studies.vibo.conditions import Condition
from bayesirt.studies.vibo.settings import StudySettings

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
train, holdout = io.read_responses(snakemake.input.responses), io.read_responses(snakemake.input.holdout)
hidden, truth = pd.read_csv(snakemake.input.hidden), pd.read_csv(snakemake.input.truth)
cond = Condition(w.design, w.missing, w.method, int(w.rep))
out = methods.fit(
    train,
    hidden,
    holdout,
    truth,
    cond,
    settings=StudySettings.from_study(snakemake.params.study),
    seed=snakemake.params.seed,
)
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
log.info("%s: %s", cond.folder, out.record["evaluation"])
records.write_fit(out, Path(snakemake.output.record).parent)
fit_tables.write(Path(snakemake.output.record).parent, train)
