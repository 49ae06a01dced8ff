"""Compare every imputation objective with the complete-data reference (rule rb_comparison:
the fit records, in their blocks' folders, are its params)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs
from bayesirt.studies.rb_imputation import figures, tables

log = logs.to_file(snakemake.log[0])
reference = pd.read_csv(snakemake.input.reference)
fits, estimates, losses = [], {"reference": reference}, {}
losses["reference"] = pd.read_csv(Path(snakemake.input.reference).parent / "loss.csv")
for record_path in snakemake.params.fits:
    folder, record = Path(record_path).parent, io.read_json(record_path)
    fits.append((record, pd.read_csv(folder / "estimates.csv")))
    if record["replication"] == 0:  # the figures show the first replication
        estimates[record["condition"]] = fits[-1][1]
        losses[record["condition"]] = pd.read_csv(folder / "loss.csv")
tabs = tables.aggregate(reference, fits, [io.read_json(p) for p in snakemake.input.imputation])
for name in ("errors", "summary", "aggregate", "imputation", "timings"):
    io.write_table(tabs[name], snakemake.output[name])
figures.figures(tabs["errors"], estimates, losses, dict(snakemake.output.items()))
log.info("compared %d fits over %d replications", len(fits), len({r["replication"] for r, _ in fits}))
