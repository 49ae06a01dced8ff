"""One dcm_bbvi fit: EM, BBVI (with or without control variates), collapsed VI or NUTS (rules fit_dcm_bbvi*)."""

from pathlib import Path

import numpy as np
import pandas as pd

from bayesirt import io, logs, records
from bayesirt.studies import dcm_bbvi

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
method = getattr(w, "method", "nuts")
spec = dcm_bbvi.FitSpec(w.design, w.missing, method, int(w.rep))
rm = io.read_responses(snakemake.input.responses)
truth = pd.read_csv(snakemake.input.truth)
out = dcm_bbvi.run_fit(method, rm, truth, np.asarray(rm.attrs["q_matrix"]), seed=snakemake.params.seed,
                       config=dcm_bbvi.study_settings(snakemake.params.study), fields=dcm_bbvi.fit_spec_fields(spec))
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
log.info("%s: pattern accuracy %.3f", method, out.record["accuracy"]["pattern_accuracy"])
records.write_fit(out, Path(snakemake.output.record).parent)
