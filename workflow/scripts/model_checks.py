"""Model checks beside one fit (rule rb_model_checks, for the complete-data reference; the
fits of vibo, gibbs_2pno and dcm_bbvi write theirs in their block's job): item_fit.csv,
person_fit.csv, global_fit.json."""

from pathlib import Path

from bayesirt import io, logs
from bayesirt.studies import model_checks

log = logs.to_file(snakemake.log[0])
checks = model_checks.write(Path(snakemake.input.record).parent, io.read_responses(snakemake.input.responses))
log.info(
    "%d of %d items flagged (%d misfit, %d local dependence), %.1f%% of persons flagged",
    checks.summary["items_flagged"],
    checks.summary["items"],
    checks.summary["items_misfit"],
    checks.summary["items_local_dependence"],
    100 * checks.summary["persons_flagged_share"],
)
