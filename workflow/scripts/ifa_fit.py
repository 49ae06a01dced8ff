"""A block of IWAE or IWAVB fits of an amortized_ifa condition, fitted together and each evaluated
on its held-out persons (rule fit_amortized_ifa); every fit's files go to rep<r>/ in the block's
folder, where the rules after it read them."""

from pathlib import Path

from bayesirt import logs, records
from bayesirt.studies import fit_tables
from bayesirt.studies.amortized_ifa import Condition, data, methods, settings

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
study = settings.Settings.from_config(snakemake.config)
reps = snakemake.params.reps
truths = snakemake.input.truth or [None] * len(reps)
block = []
for rep, seed, responses, holdout, truth in zip(
    reps, snakemake.params.seeds, snakemake.input.responses, snakemake.input.holdout, truths, strict=True
):
    train, held_out, true_values = data.read_design_data(responses, holdout, truth)
    spec = Condition(w.design, w.method, int(w.factors), int(w.samples), int(rep))
    block.append(methods.Replication(train, held_out, true_values, spec, seed))
# as many worker processes as the job's threads (Snakemake hands them over as OMP_NUM_THREADS)
outs = methods.fit_block(block, study)
for rep, out in zip(block, outs, strict=True):
    if not out.record["converged"]:
        log.warning("rep%d did not converge: %s", rep.cond.rep, out.record["convergence_reason"])
    log.info("rep%d: held-out log-likelihood per person %s", rep.cond.rep, out.record["heldout_loglik"])
    folder = Path(snakemake.output[0]) / f"rep{rep.cond.rep}"
    records.write_fit(out, folder)
    fit_tables.write(folder, rep.train, snakemake.input.person_ids or None)
