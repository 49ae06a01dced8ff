"""Fetch a real data set's raw download (rule download_raw): checksum, retries, atomic write."""

from bayesirt import io, logs
from bayesirt.data import download

log = logs.to_file(snakemake.log[0])
spec = snakemake.params.spec
# a copy downloaded by hand goes to data/raw/{dataset}/manual/<file name in the url>
manual = download.manual_location(spec["url"], snakemake.params.manual_folder)
record = download.fetch(
    spec["url"],
    snakemake.output.download,
    sha256=spec.get("sha256"),
    size=spec.get("size"),
    retries=snakemake.params.retries,
    timeout=snakemake.params.timeout,
    manual_path=manual,
)
record["dataset"] = snakemake.wildcards.dataset
io.write_json(record, snakemake.output.record)
log.info(
    "fetched %s -> %s: %d bytes, sha256 %s%s",
    spec["url"],
    snakemake.output.download,
    record["size"],
    record["sha256"],
    " (verified)" if record["sha256_verified"] else " (not verified: no sha256 in the config; recorded here)",
)
