"""One dcm_bbvi fit: EM, BBVI (with or without control variates), collapsed VI or NUTS (rules fit_dcm_bbvi*)."""

from pathlib import Path

from bayesirt import logs, records
from bayesirt.studies.dcm_bbvi import data, methods
from bayesirt.studies.dcm_bbvi.conditions import FitSpec

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
method = getattr(w, "method", "nuts")
spec = FitSpec(w.design, w.missing, method, int(w.rep))
rm, truth, q = data.read(snakemake.input.responses, snakemake.input.truth)
out = methods.fit(
    method,
    rm,
    truth,
    q,
    seed=snakemake.params.seed,
    config=methods.study_config(snakemake.params.settings),
    fields=spec.fields,
)
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
log.info("%s: pattern accuracy %.3f", method, out.record["accuracy"]["pattern_accuracy"])
records.write_fit(out, Path(snakemake.output.record).parent)
