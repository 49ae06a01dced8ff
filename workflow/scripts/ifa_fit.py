"""One IWAE or IWAVB fit of an amortized_ifa design, evaluated on the held-out persons (rule fit_amortized_ifa)."""

from pathlib import Path

from bayesirt import logs, records
from bayesirt.studies import fit_tables
from bayesirt.studies.amortized_ifa import FitSpec, data, methods, settings

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
study = settings.Settings.from_config(snakemake.config)
train, holdout, truth = data.read_design_data(
    snakemake.input.responses, snakemake.input.holdout, snakemake.input.truth or None
)
spec = FitSpec(w.design, w.method, int(w.factors), int(w.samples), int(w.rep))
out = methods.fit(
    train,
    holdout,
    truth,
    spec,
    study.design(w.design),
    study.evaluation,
    seed=snakemake.params.seed,
    dataset=snakemake.params.dataset,
)
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
log.info("held-out log-likelihood per person: %s", out.record["heldout_loglik"])
records.write_fit(out, Path(snakemake.output.record).parent)
fit_tables.write(Path(snakemake.output.record).parent, train, snakemake.input.person_ids or None)
