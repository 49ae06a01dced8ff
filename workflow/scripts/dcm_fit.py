"""A block of dcm_bbvi fits of one condition: EM, BBVI (with or without control variates),
collapsed VI or NUTS on each replication of the block (rules fit_dcm_bbvi*); every fit's files
and its model checks (item fit, person fit, local dependence) go to rep<r>/ in the block's
folder, where the rules after it read them."""

from pathlib import Path

from bayesirt import logs, records
from bayesirt.studies import model_checks
from bayesirt.studies.dcm_bbvi import data, methods
from bayesirt.studies.dcm_bbvi.conditions import Condition

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
method = getattr(w, "method", "nuts")
block = []
for rep, seed, responses, truth in zip(
    snakemake.params.reps, snakemake.params.seeds, snakemake.input.responses, snakemake.input.truth, strict=True
):
    rm, true_values, q = data.read(responses, truth)
    block.append(methods.Replication(rm, true_values, q, Condition(w.design, w.missing, method, int(rep)), seed))
outs = methods.fit_block(block, snakemake.params.settings)
for rep, out in zip(block, outs, strict=True):
    if not out.record["converged"]:
        log.warning("rep%d did not converge: %s", rep.cond.rep, out.record["convergence_reason"])
    log.info("rep%d: %s pattern accuracy %.3f", rep.cond.rep, method, out.record["accuracy"]["pattern_accuracy"])
    folder = Path(snakemake.output[0]) / f"rep{rep.cond.rep}"
    records.write_fit(out, folder)
    checks = model_checks.write(folder, rep.rm)
    log.info(
        "rep%d: %d of %d items flagged by the model checks",
        rep.cond.rep,
        checks.summary["items_flagged"],
        checks.summary["items"],
    )
