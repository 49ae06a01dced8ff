"""The fits a config asks of study ``rb_imputation``, and the names of their conditions.

Snakemake imports this module when it parses the workflow, on every run and, on a cluster, in
every job: standard library only. It also holds the one fact about the imputation objectives
that naming the conditions needs, which of them draw imputed copies (``COPIES``), so that
parsing never imports ``inference.variational.objectives`` (JAX).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bayesirt.studies.design_conditions import split_blocks

STUDY = "rb_imputation"
# the imputation objectives, as ``inference.variational.objectives.NAMES`` (a unit test holds them equal)
OBJECTIVES = (
    "zero_fill",
    "naive_average",
    "rao_blackwell",
    "rao_blackwell_batch",
    "exact_marginal",
    "rao_blackwell_seed",
    "importance_weighted",
)
# the objectives that average over M imputed copies: their conditions carry _M<copies>
COPIES = ("naive_average", "rao_blackwell", "rao_blackwell_batch", "rao_blackwell_seed", "importance_weighted")

# Seed 000 as written (section 7, "Notebook Workflow Summary"), where the pipeline runs it:
# ``rao_blackwell_seed`` is the seed's objective, "logsumexp(stack(results)) - log(M)" over the
# whole batch's copies (section 6.2; the same estimator as ``rao_blackwell_batch``), always at the
# seed's M, "n_imputation_samples=3", whatever ``n_copies`` sweeps; the seed's design
# (``seed_dataset``: the RWA data "subsampled to 500 persons", the data set's ``subsample``) is
# fitted under the seed's missingness only, "15% MCAR on top of the natural ~0.3%".
SEED_OBJECTIVE = "rao_blackwell_seed"
SEED_N_COPIES = 3
SEED_MISSING = "mcar15"
COMPLETE = "complete"  # the method (record field ``objective``) of the complete-data reference fit
METHODS = (COMPLETE, *OBJECTIVES)
REFERENCE = "reference"  # the condition name of the complete-data fit


def uses_copies(objective: str) -> bool:
    """Whether an objective draws imputed copies (and so has an M)."""
    return objective in COPIES


def condition_names(study: dict) -> list[str]:
    """Fit conditions of a config's ``studies.rb_imputation``: the objectives, with
    ``_M<copies>`` for each M of ``n_copies`` where the objective draws imputed copies."""
    out = []
    for objective in study["objectives"]:
        if objective == SEED_OBJECTIVE:
            out.append(f"{objective}_M{SEED_N_COPIES}")
        elif uses_copies(objective):
            out += [f"{objective}_M{m}" for m in study["n_copies"]]
        else:
            out.append(objective)
    return out


def parse_condition(condition: str) -> tuple[str, int | None]:
    """(objective, M or None) of a condition name such as ``rao_blackwell_M5``."""
    objective, copies = re.fullmatch(r"([a-z_]+?)(?:_M(\d+))?", condition).groups()
    return objective, (int(copies) if copies else None)


@dataclass(frozen=True)
class Condition:
    """One fit of the study: the complete-data reference of a data set (``rep`` None), or one
    objective (``method``) with its M (``n_copies``) on one replication's masked responses."""

    dataset: str
    condition: str  # REFERENCE, or an objective with _M<copies> where it draws copies
    method: str  # COMPLETE or an objective
    missing: str | None = None  # the injected missingness, e.g. mcar15 (None: the reference)
    rep: int | None = None
    n_copies: int | None = None

    @property
    def folder(self) -> str:
        """The reference's folder; an objective's fit's name, whose files lie in ``rep<r>/`` of
        its block's folder (``block_folder``)."""
        if self.rep is None:
            return f"results/{STUDY}/{self.dataset}/{REFERENCE}"
        return f"results/{STUDY}/{self.dataset}/{self.missing}/{self.condition}/rep{self.rep}"

    def block_folder(self, block: int) -> str:
        """The folder of block ``block`` of the fit's condition (the fits of one job, each in
        ``rep<r>/``)."""
        if self.rep is None:
            raise ValueError("the complete-data reference is fitted alone, not in a block")
        return f"results/{STUDY}/{self.dataset}/{self.missing}/{self.condition}/blocks/block{block}"


def missing_designs(study: dict, dataset: str | None = None) -> list[str]:
    """The study's missingness designs (its ``missing``: one name or a list of them), in order;
    of the seed's design (``dataset`` the study's ``seed_dataset``), the seed's alone."""
    if dataset is not None and dataset == study.get("seed_dataset"):
        return [SEED_MISSING]
    missing = study["missing"]
    return [missing] if isinstance(missing, str) else list(missing)


def datasets(study: dict) -> list[str]:
    """The data sets the study fits: its ``dataset``, then the seed's design (``seed_dataset``)
    where the config names one."""
    seed = study.get("seed_dataset")
    return [study["dataset"]] + ([seed] if seed else [])


def conditions(config: dict) -> list[Condition]:
    """Every fit the validated config asks for, data set by data set (``datasets``): the
    reference, then each replication's conditions in the order of ``condition_names`` (none when
    the study is off)."""
    study = config["studies"].get(STUDY)  # a config may leave the study out
    if not study or not study["enabled"]:
        return []
    fits = []
    for dataset in datasets(study):
        fits.append(Condition(dataset, REFERENCE, COMPLETE))
        for missing in missing_designs(study, dataset):
            for rep in range(study["replications"]):
                for name in condition_names(study):
                    objective, copies = parse_condition(name)
                    fits.append(Condition(dataset, name, objective, missing, rep, copies))
    return fits


def condition_blocks(config: dict, fit: Condition) -> list[list[int]]:
    """The replications of ``fit``'s condition in blocks of the study's ``block_size``, in order
    (one block when it exceeds them). Every condition of the study has the same replications
    (the study's masks), so the blocks are the same for all of them."""
    study = config["studies"][STUDY]
    return split_blocks(range(study["replications"]), study["block_size"])
