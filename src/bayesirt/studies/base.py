"""The shape every study has, and the one result type every method returns.

A study is a package ``bayesirt.studies.<name>`` of the same modules, each with one job:

``conditions.py``
    ``STUDY`` (the config key), ``METHODS`` (method names) and ``conditions(config)``: every fit
    the whole validated config asks for, as frozen dataclasses with a ``folder`` property, the
    fit's name (``results/<study>/.../rep<r>``), a ``rep`` and a ``block_folder(b)``; and
    ``condition_blocks(config, fit)``, the replications of the fit's condition in the blocks its
    jobs fit (``design_conditions.split_blocks``). A fit made in a block lies in ``rep<r>/`` of
    its block job's folder (``design_conditions.fit_folder``: ``.../blocks/block<b>/rep<r>``,
    which ``records.fit_name`` turns back into the name); the workflow's block rules read the
    blocks through these alone. Standard library only: Snakemake imports it when it parses
    the workflow, on every run and in every cluster job (an import contract keeps JAX, numpyro,
    TFP and matplotlib out).
``settings.py``
    ``check(config)``: the study's checks across config keys that the schema cannot express,
    raising ``config.ConfigError`` with a one-line message naming the key; and frozen
    dataclasses built once from the validated config (``from_config``). Defaults live in the
    config schema only, so settings read keys, never ``.get(key, default)``. Light enough for
    parse time (no JAX).
``data.py``
    The data of one condition: simulated with its truth, or a prepared data set read.
``methods.py``
    ``METHODS``: a name -> function registry, one short function per method, each returning a
    ``MethodResult``; and ``fit(...)``, which looks the method up.
``tables.py``
    ``aggregate(...)``: the study's fit records and estimates into tidy tables; its claims.
``figures.py``
    ``figures(...)``: the study's PNG figures, drawn with the shared helpers of
    ``bayesirt.plotting``.
``evaluation.py`` (optional)
    What a study computes of every fit alike, whatever the method, when ``methods.py`` would
    otherwise outgrow its one job (vibo: recovery, calibration, scored cells, held-out
    log-likelihood).
``diagnostics.py`` (optional)
    Fits beside the run's that say whether a figure unlike the seed's comes from the seed's
    method or from this implementation, shown on the reproduction page (dcm_bbvi).

``methods.py`` also gives ``fit_block(reps, settings)``, with one signature in every study: the
replications of one condition (the study's ``methods.Replication``: data, seed and condition)
fitted as one block (``inference.execution.bulk`` for the methods on the training driver, one
after another for the others) with the study's ``settings.Settings``, each evaluated as ``fit``
evaluates a single fit; what a block may use of the machine (worker processes) comes from the
settings and the job's cores, never from extra arguments. A diagnostic that fits a variant of a
method (amortized_ifa's IWAVB without its implicit part) may pass a keyword-only option with a
default; the workflow never sets one.

Study packages do not import each other (an import contract), and their ``__init__`` imports
nothing but ``conditions``, so that a parse-time import stays cheap. ``load(name)`` gathers the
four entry points of a study as a ``Study``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import pandas as pd

from bayesirt.studies import STUDIES


@dataclass(frozen=True)
class MethodResult:
    """What one fit of any method returns, and what ``records.write_fit`` writes.

    Attributes
    ----------
    record : dict
        The fit's ``fit.json`` (``workflow/schemas/fit_record.schema.yaml``): its condition,
        sizes and settings, convergence, predictive checks (held-out log-likelihood, accuracy)
        and, in its ``timing`` field, wall and compile seconds.
    estimates : pandas.DataFrame
        One tidy table of item and ability estimates (``workflow/schemas/estimates.schema.yaml``);
        ability rows are those with a ``person`` (item rows leave it empty, or -1 in the
        multidimensional tables).
    losses : pandas.DataFrame or None
        The loss history of an optimisation method (``step``, ``loss``), else None.
    idata : arviz.InferenceData or None
        The draws of a sampler or of a variational posterior, else None.
    """

    record: dict
    estimates: pd.DataFrame
    losses: pd.DataFrame | None = None
    idata: Any | None = None

    def _is_ability(self) -> pd.Series:
        if "person" not in self.estimates:
            return pd.Series(False, index=self.estimates.index)
        person = self.estimates["person"]
        return person.notna() & (person >= 0)

    @property
    def items(self) -> pd.DataFrame:
        """The item rows of ``estimates``."""
        return self.estimates[~self._is_ability()]

    @property
    def abilities(self) -> pd.DataFrame:
        """The ability rows of ``estimates`` (one per person and dimension)."""
        return self.estimates[self._is_ability()]

    @property
    def timing(self) -> dict:
        return self.record.get("timing", {})


class Study(NamedTuple):
    """A study's four entry points (``load``).

    The fits a config asks for, one fit, the tables of all fits and the figures drawn from
    those tables.

    Attributes
    ----------
    name : str
        The study's name.
    conditions : callable
        ``conditions(config) -> list``: the fits the config asks for.
    fit : callable
        One fit, returning a ``MethodResult``.
    aggregate : callable
        The tables of all fits (a dict of tables).
    figures : callable
        The figures drawn from those tables.
    methods : dict
        The study's methods (``METHODS`` of its ``methods`` module).
    """

    name: str
    conditions: Callable[[dict], list]
    fit: Callable[..., MethodResult]
    aggregate: Callable[..., dict]
    figures: Callable[..., Any]
    methods: dict


def load(name: str) -> Study:
    """The study package ``bayesirt.studies.<name>`` as a ``Study``.

    Imports its fitting side, so not for parse time.

    Parameters
    ----------
    name : str
        One of ``STUDIES``.

    Returns
    -------
    Study
        The study's entry points.

    Raises
    ------
    ValueError
        If the study is not known.
    """
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; the studies are {', '.join(STUDIES)}")
    module = lambda part: importlib.import_module(f"bayesirt.studies.{name}.{part}")
    conditions, methods = module("conditions"), module("methods")
    return Study(
        name, conditions.conditions, methods.fit, module("tables").aggregate, module("figures").figures, methods.METHODS
    )
