"""One IWAE or IWAVB fit of an amortized_ifa design, evaluated on the held-out persons (rule ifa_fit)."""

from pathlib import Path

from bayesirt import fits, ifa_study, logs

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
train, holdout, truth = ifa_study.read_design_data(snakemake.input.responses, snakemake.input.holdout,
                                                   snakemake.input.truth or None)
spec = ifa_study.FitSpec(w.design, w.method, int(w.factors), int(w.samples), int(w.rep))
out = ifa_study.run_fit(train, holdout, truth, spec, design=snakemake.params.design, seed=snakemake.params.seed,
                        eval_samples=snakemake.params.eval_samples, posterior_draws=snakemake.params.posterior_draws,
                        dataset=snakemake.params.dataset)
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
log.info("held-out log-likelihood per person: %s", out.record["heldout_loglik"])
fits.write_fit(out, Path(snakemake.output.record).parent)
