"""Prepare the RWA response matrix from the raw download (rule prepare_rwa)."""

from bayesirt import io, logs
from bayesirt.data import download, rwa, subsample

log = logs.to_file(snakemake.log[0])
spec = snakemake.params.spec
record = io.read_json(snakemake.input.record)
# errors in the data name the user's file (configured URL or path), not our cached copy
with download.raw_csv(snakemake.input.download, spec["member"], source=download.source_of(record)) as csv:
    rm = rwa.load(csv, reorient=spec["reorient"], drop_empty_persons=spec["drop_empty_persons"])
if spec["subsample"] is not None:  # seed 000's notebook: "subsampled to 500 persons"
    key = f"datasets.{snakemake.wildcards.dataset}.subsample"
    rm = subsample.persons(rm, spec["subsample"], spec["subsample_seed"], where=key)
rm.attrs.update({"dataset": snakemake.wildcards.dataset, "download": record})
io.write_responses(rm, snakemake.output.responses)
log.info("RWA %s: %s", snakemake.wildcards.dataset, rwa.summary(rm))
