"""Item and person tables beside one fit (rules rb_irt_tables, ifa_irt_tables)."""

from pathlib import Path

from bayesirt import io, logs
from bayesirt.studies import fit_tables

log = logs.to_file(snakemake.log[0])
rm = io.read_responses(snakemake.input.responses)
ids = fit_tables.read_person_ids(snakemake.input.person_ids) if snakemake.input.get("person_ids") else None
items, persons = fit_tables.tables(Path(snakemake.input.record).parent, rm, ids)
io.write_table(items, snakemake.output.item_table)
io.write_table(persons, snakemake.output.person_table)
log.info("%d item rows, %d person rows", len(items), len(persons))
