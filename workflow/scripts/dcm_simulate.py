"""Simulated LCDM data of one dcm_bbvi design, missingness and replication (rule dcm_simulate)."""

from bayesirt import io, logs
from bayesirt.studies.dcm_bbvi import data
from bayesirt.studies.dcm_bbvi.conditions import missing_rate

log = logs.to_file(snakemake.log[0])
w = snakemake.wildcards
rm, truth, q = data.simulate(snakemake.params.spec, missing_rate(w.missing), snakemake.params.seed)
rm.attrs.update({"dataset": f"dcm_bbvi_{w.design}_{w.missing}", "design": w.design})
io.write_table(truth, snakemake.output.truth)
io.write_responses(rm, snakemake.output.responses)
log.info(
    "simulated %s/%s rep %s: %d persons x %d items, %d attributes, %.1f%% missing",
    w.design,
    w.missing,
    w.rep,
    rm.n_persons,
    rm.n_items,
    q.shape[1],
    100 * (rm.responses < 0).mean(),
)
