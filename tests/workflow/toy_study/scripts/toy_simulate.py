import json

import numpy as np

design = snakemake.params.design
rng = np.random.default_rng(snakemake.params.seed)
np.savetxt(snakemake.output.data, rng.normal(design["mean"], 1.0, design["n"]))
with open(snakemake.output.truth, "w") as f:
    json.dump({"mean": design["mean"]}, f)
