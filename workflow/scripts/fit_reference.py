"""Complete-data factorized GRM fit by mean-field ADVI (rule fit_reference)."""

from pathlib import Path

from bayesirt import logs, records
from bayesirt.studies.rb_imputation import data, methods
from bayesirt.studies.rb_imputation.conditions import COMPLETE

log = logs.to_file(snakemake.log[0])
out = methods.fit(
    COMPLETE,
    data.read(snakemake.input.responses, snakemake.input.truth),
    seed=snakemake.params.seed,
    settings=snakemake.params.settings,
    fields={"dataset": snakemake.wildcards.dataset},
)
if not out.record["converged"]:
    log.warning("fit did not converge: %s", out.record["convergence_reason"])
records.write_fit(out, Path(snakemake.output.record).parent)
