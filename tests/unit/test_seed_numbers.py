"""Every number a seed reports appears on its study's reproduction page, beside ours or marked not
comparable (``bayesirt.studies.seed_numbers``).

Each study's list, ``docs/reproduction/data/<study>/seed_numbers.yaml``, names the seed's section
and a few of its words for every number; the words must be the seed's (whitespace aside), the
ids unique, and each entry either a figure the study computes from its committed tables or a
reason it cannot. The committed page must show the section the tables give today, so a list or
table changed without regenerating the page fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from bayesirt.studies import reproduction, seed_numbers
from bayesirt.studies.dcm_bbvi import seed_numbers as dcm_numbers
from bayesirt.studies.gibbs_2pno import seed_numbers as gibbs_numbers

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "reproduction" / "data"
PAGES = ROOT / "docs" / "reproduction"
SEEDS = ROOT.parent / "shared" / "seeds"
STUDIES = reproduction.STUDIES


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("study", STUDIES)
def test_every_study_keeps_a_list(study):
    table, entries = seed_numbers.load(study, DATA / study)
    assert table["study"] == study and entries
    ids = [e["id"] for e in entries]
    assert len(ids) == len(set(ids)), ids


@pytest.mark.parametrize("study", STUDIES)
def test_every_quote_is_the_seeds(study):
    table = yaml.safe_load((DATA / study / seed_numbers.FILE).read_text())
    if not SEEDS.is_dir():  # the seed documents sit beside the checkout in development and CI
        pytest.skip("no seed documents beside the checkout")
    text = words((SEEDS / table["seed"]).read_text())
    for entry in table["numbers"]:
        assert words(entry["quote"]) in text, f"{study}: {entry['id']}'s quote is not in {table['seed']}"


@pytest.mark.parametrize("study", STUDIES)
def test_every_ours_is_a_number_or_a_reason(study):
    tables = reproduction.load_tables(study, DATA / study)
    rows = seed_numbers.rows(study, tables, DATA / study)
    for row in rows:
        if row.comparable:
            assert re.search(r"\d", row.ours), f"{study}: {row.id}'s figure {row.ours!r} holds no number"
        assert row.note.strip(), f"{study}: {row.id} has no note (what ours is, or why there is none)"


@pytest.mark.parametrize("study", STUDIES)
def test_the_page_shows_every_entry(study):
    tables = reproduction.load_tables(study, DATA / study)
    page = (PAGES / f"{study}.md").read_text()
    section = seed_numbers.section(study, tables, DATA / study)
    assert section in page, f"{study}: the page's seed numbers are stale; run tools/reproduction.py page {study}"
    _, entries = seed_numbers.load(study, DATA / study)
    for entry in entries:
        assert f"| `{entry['id']}` |" in page, f"{study}: {entry['id']} is not on the page"


def checked(entries: list[dict], figures=None) -> list[dict]:
    return seed_numbers.validate({"study": "s", "seed": "x.txt", "numbers": entries}, "s", figures or {"f": None})


ENTRY = {"id": "a", "section": "1", "quote": "some words", "value": 0.5}


@pytest.mark.parametrize(
    "entries",
    [
        [ENTRY | {"ours": "f"}, ENTRY | {"ours": "f"}],  # an id twice
        [ENTRY | {"ours": "f", "not_comparable": "why"}],  # both
        [ENTRY],  # neither
        [ENTRY | {"not_comparable": "  "}],  # no reason
        [ENTRY | {"ours": "g"}],  # a figure the study does not define
        [ENTRY | {"ours": "f", "value": "about half"}],  # not a number
        [{k: v for k, v in ENTRY.items() if k != "quote"} | {"ours": "f"}],  # no quote
    ],
)
def test_a_faulty_list_is_refused(entries):
    with pytest.raises(ValueError):
        checked(entries)


def test_a_sound_list_passes_and_shows_its_values():
    entries = checked(
        [ENTRY | {"ours": "f"}, ENTRY | {"id": "b", "value": {"x": 1, "y": [0.25, 2]}, "not_comparable": "r"}]
    )
    assert [e["id"] for e in entries] == ["a", "b"]
    assert seed_numbers.seed_text(entries[1]["value"]) == "x 1, y [0.25, 2]"
    assert seed_numbers.seed_text(515707) == "515,707"
    assert seed_numbers.seed_text([0.123456, 0.2, 0.3, 0.4, 0.5]) == "[0.1235, 0.2, 0.3, 0.4, 0.5]"


def fits(rows) -> dict:
    columns = ["design", "missing", "method", "rep", "pattern_accuracy", "status"]
    rows = [row if len(row) == 6 else (*row, "converged") for row in rows]
    oracle = pd.DataFrame({"design": "seed", "missing": "mcar0", "rep": [0, 1], "pattern_accuracy": [0.97, 0.95]})
    return {"fits": pd.DataFrame(rows, columns=columns), "oracle": oracle}


def test_dcm_overall_accuracy_prefers_the_seeds_run_and_says_when_it_stands_in():
    ours = fits([("seed", "mcar0", "bbvi", 0, 0.90), ("seed", "mcar0", "bbvi", 1, 0.92)])
    figure = dcm_numbers.overall_accuracy(ours)
    assert figure.value.startswith("0.910 [") and "bbvi_seed" in figure.note
    ours = fits(
        [
            ("seed", "mcar0", "bbvi", 0, 0.90),
            ("seed", "mcar0", "bbvi_seed", 0, 0.96),
            ("seed", "mcar0", "bbvi_seed", 1, 0.96),
        ]
    )
    figure = dcm_numbers.overall_accuracy(ours)
    assert figure.value.startswith("0.960") and "this project's BBVI (bbvi) 0.900 (1 replication)" in figure.note
    assert "non-finite" not in figure.note
    assert dcm_numbers.beta_truth_accuracy(ours).value is None  # no bbvi_beta_truth_seed fit: a reason instead
    # runs that became non-finite are named as such
    ours = fits([("seed", "mcar0", "bbvi_seed", 0, 0.24, "diverged"), ("seed", "mcar0", "bbvi_seed", 1, 0.25)])
    assert "; 1 of 2 runs became non-finite before their last step" in dcm_numbers.overall_accuracy(ours).note


def test_gibbs_groups_are_the_share_times_the_persons():
    posterior = pd.DataFrame(
        {
            "parameter": ["pi"],
            "category": [-1],
            "mean": [0.5],
            "sd": [0.05],
            "q5": [0.4],
            "q95": [0.6],
            "r_hat": [1.0],
            "true": [4 / 7],
        }
    )
    figure = gibbs_numbers.mixture_groups({"posterior": posterior})
    assert figure.value.startswith("350, 350 ") and "280 to 420" in figure.value
    assert gibbs_numbers.mixture_groups({"posterior": posterior.iloc[:0]}).value is None
