"""Hide responses on purpose (rule inject_missingness): the injected matrix and the mask of
the cells hidden by injection."""

from bayesirt import io, logs
from bayesirt.data import missingness
from bayesirt.seeds import derive

log = logs.to_file(snakemake.log[0])
kind = snakemake.wildcards.kind
rate = float(snakemake.wildcards.percent) / 100.0
cfg = snakemake.params.options  # validated: the schema gives every default
kind_options = {
    "mar": {"strength": cfg["mar_strength"], "drivers": cfg["mar_drivers"]},
    "mnar": {"strength": cfg["mnar_strength"]},
}.get(kind, {})
wc = snakemake.wildcards
seed = derive(snakemake.params.base_seed, "missingness", wc.dataset, kind, wc.percent, wc.rep)
rm = io.read_responses(snakemake.input.responses)
out, hidden = missingness.inject(
    rm,
    kind=kind,
    rate=rate,
    seed=seed,
    keep_one_per_person=cfg["keep_one_per_person"],
    keep_one_per_item=cfg["keep_one_per_item"],
    **kind_options,
)
out.attrs["missingness"]["replication"] = int(snakemake.wildcards.rep)
missingness.write_hidden(out, hidden, snakemake.output.hidden)
io.write_responses(out, snakemake.output.responses)
rec = out.attrs["missingness"]
log.info(
    "%s: %s missingness, target %.4f, achieved %.4f (%d cells hidden), seed %d",
    snakemake.wildcards.dataset,
    kind,
    rate,
    rec["achieved_rate"],
    rec["n_hidden"],
    rec["seed"],
)
