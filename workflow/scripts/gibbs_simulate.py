"""Data of one condition of a gibbs_2pno design: simulated 2PNO responses with the design's
missingness and the truth, or a prepared real data set with the design's extra missingness
(rule gibbs_simulate)."""

from bayesirt import io, logs
from bayesirt.studies.gibbs_2pno import data

log = logs.to_file(snakemake.log[0])
w, p = snakemake.wildcards, snakemake.params
if "dataset" in p.design:
    rm, truth = data.observed_condition(
        io.read_responses(snakemake.input.dataset),
        w.missing,
        missing_seed=p.missing_seed,
        where=snakemake.input.dataset,
    )
else:
    rm, truth = data.simulate_condition(p.design, w.missing, p.seed, missing_seed=p.missing_seed)
rm.attrs.update({"design": w.design, "replication": int(w.rep)})
io.write_table(truth, snakemake.output.truth)
io.write_responses(rm, snakemake.output.responses)
log.info(
    "%s %s rep %s: %d persons x %d items, %.3f missing, seed %d",
    w.design,
    w.missing,
    w.rep,
    rm.n_persons,
    rm.n_items,
    (rm.responses == -1).mean(),
    p.seed,
)
