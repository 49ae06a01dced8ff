"""One IWAE or IWAVB fit of an amortized_ifa design, evaluated on the held-out persons (rule fit_amortized_ifa)."""

from pathlib import Path

from bayesirt import logs, records
from bayesirt.studies import fit_tables
from bayesirt.studies.amortized_ifa import FitSpec, data, fit

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
train, holdout, truth = data.read_design_data(snakemake.input.responses, snakemake.input.holdout,
                                              snakemake.input.truth or None)
spec = FitSpec(w.design, w.method, int(w.factors), int(w.samples), int(w.rep))
out = fit.run_fit(train, holdout, truth, spec, design=snakemake.params.design, seed=snakemake.params.seed,
                  eval_samples=snakemake.params.eval_samples, posterior_draws=snakemake.params.posterior_draws,
                  dataset=snakemake.params.dataset)
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
log.info("held-out log-likelihood per person: %s", out.record["heldout_loglik"])
records.write_fit(out, Path(snakemake.output.record).parent)
fit_tables.write(Path(snakemake.output.record).parent, train, snakemake.input.person_ids or None)
