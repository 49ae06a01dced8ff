"""Data of one condition of a vibo design (rule vibo_simulate): simulated training persons with
the design's missingness and the scored cells hidden, the scored cells' true responses, new
persons and the truth; or, for a design that names a dataset, that prepared data set split into
training and new persons with the same missingness and scored cells, and an empty truth."""

from bayesirt import io, logs
from bayesirt.studies.vibo import data

log = logs.to_file(snakemake.log[0])
w, p = snakemake.wildcards, snakemake.params
dataset = getattr(snakemake.input, "dataset", None)  # a design that names a prepared data set
train, hidden, holdout, truth = data.condition_data(
    p.design,
    w.missing,
    p.seed,
    score_fraction=p.score_fraction,
    heldout_fraction=p.heldout_fraction,
    missing_seed=p.missing_seed,
    responses=io.read_responses(dataset) if dataset else None,
    where=dataset or "",
)
for part in (train, holdout):
    part.attrs.update({"design": w.design, "replication": int(w.rep)})
io.write_table(truth, snakemake.output.truth)
io.write_table(hidden, snakemake.output.hidden)
io.write_responses(holdout, snakemake.output.holdout)
io.write_responses(train, snakemake.output.responses)
log.info(
    "%s %s rep %s: %d persons x %d items, %.3f missing, %d cells scored, %d new persons, seed %d",
    w.design,
    w.missing,
    w.rep,
    train.n_persons,
    train.n_items,
    (train.responses == -1).mean(),
    len(hidden),
    holdout.n_persons,
    p.seed,
)
