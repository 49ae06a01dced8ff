"""Prepare your own questionnaire (source: table) as a response matrix (rule prepare_table)."""

from bayesirt import io, logs
from bayesirt.data import item_direction, table
from bayesirt.seeds import derive

log = logs.to_file(snakemake.log[0])
name = snakemake.wildcards.dataset
spec = snakemake.params.spec
prepared = table.load(
    snakemake.input.table,
    items=spec.get("items"),
    item_pattern=spec.get("item_pattern"),
    id_column=spec["id_column"],
    delimiter=spec["delimiter"],
    coding=spec["coding"],
    missing_codes=spec["missing_codes"],
    reverse_keyed=spec["reverse_keyed"],
    reorient=spec["reorient"],
    scales=spec["scales"],
    empty_persons=spec["empty_persons"],
    key=f"datasets.{name}",
)
parts = table.split(prepared, spec["holdout_fraction"], derive(snakemake.params.base_seed, "holdout", name))
for part in (parts.train, parts.holdout):
    part.attrs["dataset"] = name
# nothing is written before every check has passed
io.write_table(parts.row_counts, snakemake.output.row_counts)
io.write_table(item_direction.item_rest_correlations(prepared.responses), snakemake.output.item_rest)
io.write_table(parts.persons, snakemake.output.persons)
io.write_responses(parts.holdout, snakemake.output.holdout)
io.write_responses(parts.train, snakemake.output.responses)
log.info(
    "table %s: %d persons x %d items (%d held out)\n%s",
    name,
    parts.train.n_persons,
    parts.train.n_items,
    parts.holdout.n_persons,
    parts.row_counts.to_string(index=False),
)
