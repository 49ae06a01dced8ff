"""Simulate one condition of a vibo design: training persons with the design's missingness and
the scored cells hidden, the scored cells' true responses, new persons, truth (rule vibo_simulate)."""

from bayesirt import io, logs
from bayesirt.studies import vibo

log = logs.to_file(snakemake.log[0])
w, p = snakemake.wildcards, snakemake.params
train, hidden, holdout, truth = vibo.simulate_condition(p.design, w.missing, p.seed, score_fraction=p.score_fraction,
                                                        heldout_fraction=p.heldout_fraction,
                                                        missing_seed=p.missing_seed)
for part in (train, holdout):
    part.attrs.update({"design": w.design, "replication": int(w.rep)})
io.write_table(truth, snakemake.output.truth)
io.write_table(hidden, snakemake.output.hidden)
io.write_responses(holdout, snakemake.output.holdout)
io.write_responses(train, snakemake.output.responses)
log.info("%s %s rep %s: %d persons x %d items, %.3f missing, %d cells scored, %d new persons, seed %d",
         w.design, w.missing, w.rep, train.n_persons, train.n_items, (train.responses == -1).mean(), len(hidden),
         holdout.n_persons, p.seed)
