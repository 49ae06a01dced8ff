"""Prepare the IPIP-FFM response matrices (training and held-out persons) and the row counts
after every preprocessing step (rule prepare_ipip_ffm)."""

from bayesirt import io, logs
from bayesirt.data import download, ipip
from bayesirt.data.holdout import split_holdout
from bayesirt.inference.marginal import mml
from bayesirt.seeds import derive

log = logs.to_file(snakemake.log[0])
spec = snakemake.params.spec
options = {**spec["preprocess"], "seed": snakemake.params.seed}
member = spec["member"]
record = io.read_json(snakemake.input.record)
# errors in the data name the user's file (configured URL or path), not our cached copy
with download.raw_csv(snakemake.input.download, member, source=download.source_of(record)) as csv:
    rm, counts = ipip.load(csv, fit_grm=mml.fit_arrays, **options)  # marginal ML GRMs for the Guttman cut-offs
split_seed = derive(snakemake.params.base_seed, "holdout", snakemake.wildcards.dataset)
train, holdout = split_holdout(rm, spec["holdout_fraction"], split_seed)
for part in (train, holdout):
    part.attrs.update({"dataset": snakemake.wildcards.dataset, "download": record})
io.write_table(counts, snakemake.output.row_counts)
io.write_responses(holdout, snakemake.output.holdout)
io.write_responses(train, snakemake.output.responses)
log.info(
    "IPIP-FFM %s: %d persons after preprocessing (%d training, %d held out)\n%s",
    snakemake.wildcards.dataset,
    rm.n_persons,
    train.n_persons,
    holdout.n_persons,
    counts.to_string(index=False),
)
