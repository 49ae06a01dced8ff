"""One method (gibbs, gibbs_omit or nuts) on one condition of a gibbs_2pno design (rule fit_gibbs_2pno)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs, records, runtime
from bayesirt.studies import fit_tables, gibbs_2pno

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
if w.method != "nuts":  # the Gibbs samplers' sums over persons run faster in YNNPACK
    runtime.use_library_reductions()
responses, truth = io.read_responses(snakemake.input.responses), pd.read_csv(snakemake.input.truth)
cond = gibbs_2pno.Condition(w.design, w.missing, w.method, int(w.rep))
out = gibbs_2pno.run_fit(responses, truth, cond, study=snakemake.params.study, seed=snakemake.params.seed)
if not out.record["converged"]:
    log.warning("chains not converged by the record's rule: %s", out.record["convergence_reason"])
log.info("%s: %s; timing %s", cond.path, out.record["evaluation"], out.record["timing"])
records.write_fit(out, Path(snakemake.output.record).parent)
fit_tables.write(Path(snakemake.output.record).parent, responses)
