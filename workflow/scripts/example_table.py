"""Write an example questionnaire shipped by an installed package as CSV (rule example_table)."""

from bayesirt import logs
from bayesirt.data import examples

log = logs.to_file(snakemake.log[0])
df = examples.write_csv(snakemake.wildcards.example, snakemake.output[0])
log.info("example %s: %d rows x %d columns -> %s", snakemake.wildcards.example, *df.shape, snakemake.output[0])
