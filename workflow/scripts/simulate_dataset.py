"""Simulate a data set with known parameters (rule simulate_dataset)."""

from bayesirt import io, logs
from bayesirt.data import simulate

log = logs.to_file(snakemake.log[0])
spec = snakemake.params.spec
rm, truth = simulate.from_preset(spec["preset"], snakemake.params.seed, spec["n_persons"])
rm.attrs.update({"dataset": snakemake.wildcards.dataset, "preset": spec["preset"]})
io.write_table(truth, snakemake.output.truth)
io.write_responses(rm, snakemake.output.responses)
log.info(
    "simulated %s: %d persons x %d items, seed %d",
    snakemake.wildcards.dataset,
    rm.n_persons,
    rm.n_items,
    snakemake.params.seed,
)
