import json
from pathlib import Path

import numpy as np

method = snakemake.wildcards.method
for rep, seed, data, truth in zip(
    snakemake.params.reps, snakemake.params.seeds, snakemake.input.data, snakemake.input.truth, strict=True
):
    folder = Path(snakemake.output[0]) / f"rep{rep}"
    folder.mkdir(parents=True)
    x = np.loadtxt(data)
    estimate = float(np.mean(x) if method == "mean" else np.median(x))
    record = {
        "method": method,
        "rep": rep,
        "seed": seed,
        "estimate": estimate,
        "n": len(x),
        "truth": json.loads(Path(truth).read_text())["mean"],
    }
    (folder / "fit.json").write_text(json.dumps(record))
