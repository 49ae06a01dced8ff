"""One method (gibbs, gibbs_omit or nuts) on one condition of a gibbs_2pno design (rule fit_gibbs_2pno)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records, runtime
from bayesirt.studies import fit_tables
from bayesirt.studies.gibbs_2pno.conditions import Condition
from bayesirt.studies.gibbs_2pno.settings import Settings

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
if w.method != "nuts":  # the Gibbs samplers' sums over persons run faster in YNNPACK
    runtime.use_library_reductions()
# the fitting code (JAX) after the XLA flag above is set
from bayesirt.studies.gibbs_2pno import methods  # noqa: E402  (JAX reads the setting above)

responses, truth = io.read_responses(snakemake.input.responses), pd.read_csv(snakemake.input.truth)
cond = Condition(w.design, w.missing, w.method, int(w.rep))
out = methods.fit(responses, truth, cond, Settings.from_config(snakemake.config), seed=snakemake.params.seed)
if not out.record["converged"]:
    log.warning("chains not converged by the record's rule: %s", out.record["convergence_reason"])
log.info("%s: %s; timing %s", cond.folder, out.record["evaluation"], out.record["timing"])
records.write_fit(out, Path(snakemake.output.record).parent)
fit_tables.write(Path(snakemake.output.record).parent, responses)
