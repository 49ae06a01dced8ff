"""A block of factorized GRM fits with one imputation objective, one per replication (mask),
fitted together (rule fit_objective); every fit's files, and its item and person tables
(factorized GRM), go to rep<r>/ in the block's folder, where the rules after it read them."""

from pathlib import Path

from bayesirt import logs, records
from bayesirt.studies import fit_tables
from bayesirt.studies.rb_imputation import data, methods
from bayesirt.studies.rb_imputation.conditions import Condition, parse_condition

log = logs.to_file(snakemake.log[0])
wc = snakemake.wildcards
objective, copies = parse_condition(wc.condition)
reps = []
for rep, seed, responses, imputation in zip(
    snakemake.params.reps, snakemake.params.seeds, snakemake.input.responses, snakemake.input.imputation, strict=True
):
    cond = Condition(wc.dataset, wc.condition, objective, wc.missing, int(rep), copies)
    reps.append(methods.Replication(data.read(responses, snakemake.input.truth, imputation), cond, seed))
# the objectives use one draw of the parameters per step (the config's n_draws is the reference's)
outs = methods.fit_block(reps, snakemake.params.settings)
for rep, out in zip(reps, outs, strict=True):
    r = rep.cond.rep
    if not out.record["converged"]:
        log.warning("rep%d did not converge: %s", r, out.record["convergence_reason"])
    folder = Path(snakemake.output[0]) / f"rep{r}"
    records.write_fit(out, folder)
    if snakemake.params.tables:
        items, persons = fit_tables.write(folder, rep.data.responses, snakemake.input.person_ids or None)
        log.info("rep%d: %d item rows, %d person rows", r, len(items), len(persons))
