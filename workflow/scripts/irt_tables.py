"""Item and person tables beside one rb_imputation fit (rule rb_irt_tables)."""

from pathlib import Path

from bayesirt import io, logs
from bayesirt.studies import fit_tables

log = logs.to_file(snakemake.log[0])
items, persons = fit_tables.write(
    Path(snakemake.input.record).parent,
    io.read_responses(snakemake.input.responses),
    snakemake.input.person_ids or None,
)
log.info("%d item rows, %d person rows", len(items), len(persons))
