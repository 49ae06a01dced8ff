"""Tables and figures of one gibbs_2pno design from all its fits (rule gibbs_tables: the fits'
files, in their blocks' folders, are its params)."""

from pathlib import Path

import pandas as pd

from bayesirt import io, logs
from bayesirt.studies.gibbs_2pno import figures, tables

log = logs.to_file(snakemake.log[0])
fit_records = [io.read_json(p) for p in snakemake.params.fits]
estimates = [pd.read_csv(p) for p in snakemake.params.estimates]
aggregated = tables.aggregate(fit_records, estimates)
for name in ("fits", "recovery", "diagnostics", "nuts", "missing", "timings"):  # timings: run-dependent
    io.write_table(aggregated[name], snakemake.output[name])
missing, rep = figures.shown_fit(fit_records)
shown = {
    r["method"]: (e, str(Path(p).parent / "posterior.nc"))
    for r, e, p in zip(fit_records, estimates, snakemake.params.fits)
    if r["missing"] == missing and r["replication"] == rep
}
figures.figures(
    {m: v[0] for m, v in shown.items()}, {m: v[1] for m, v in shown.items()}, dict(snakemake.output.items())
)
log.info("%s: %d fits aggregated; figures show %s rep %d", snakemake.wildcards.design, len(fit_records), missing, rep)
