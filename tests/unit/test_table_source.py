"""The table data source (bayesirt.data.table): coding, missing codes, reverse keys, groups,
and every bad input stopping with one line that names the file, line and column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayesirt import io
from bayesirt.data import table
from bayesirt.io import MISSING, DataFormatError

GOOD = """id,age,Q1,Q2,Q3,Q4
p1,30,1,5,2,NA
p2,41,2,4,,3
p3,25,9,3,3,1
p4,38,5,1,4,5
p5,52,3,2,1,2
"""

SPEC = dict(
    item_pattern=r"Q\d",
    id_column="id",
    coding={"integers_from": 1, "n_categories": 5},
    missing_codes=["", "NA", 9],
    reverse_keyed=["Q2"],
    scales={"first": ["Q1", "Q2"], "second": ["Q3", "Q4"]},
)


def write(tmp_path, text, name="survey.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_coding_missing_reverse_keys_and_groups(tmp_path):
    out = table.load(write(tmp_path, GOOD), **SPEC)
    rm = out.responses
    # Q1: codes 1..5 -> 0..4, 9 missing; Q2 reverse-keyed: 5 -> 0, 1 -> 4; blank and NA missing
    np.testing.assert_array_equal(rm.responses[:, 0], [0, 1, MISSING, 4, 2])
    np.testing.assert_array_equal(rm.responses[:, 1], [0, 1, 2, 4, 3])
    np.testing.assert_array_equal(rm.responses[:, 2], [1, MISSING, 2, 3, 0])
    np.testing.assert_array_equal(rm.responses[:, 3], [MISSING, 2, 0, 4, 1])
    assert [it.name for it in rm.items] == ["Q1", "Q2", "Q3", "Q4"]  # age is not an item
    assert [it.scale for it in rm.items] == ["first", "first", "second", "second"]
    assert [it.reverse_keyed for it in rm.items] == [False, True, False, False]
    assert set(rm.n_categories) == {5}
    assert out.person_ids == ["p1", "p2", "p3", "p4", "p5"]
    assert rm.attrs["n_missing_cells"] == 3 and rm.attrs["factor_names"] == ["first", "second"]


def test_labels_tsv_and_parquet_give_the_same_matrix(tmp_path):
    text = "who\tA\tB\nx\tnever\toften\ny\tsometimes\t-\nz\toften\tnever\n"
    spec = dict(
        items=["A", "B"], id_column="who", coding={"labels": ["never", "sometimes", "often"]}, missing_codes=["-"]
    )
    a = table.load(write(tmp_path, text, "s.tsv"), **spec)
    np.testing.assert_array_equal(a.responses.responses, [[0, 2], [1, MISSING], [2, 0]])
    df = pd.DataFrame({"who": ["x", "y", "z"], "A": ["never", "sometimes", "often"], "B": ["often", None, "never"]})
    df.to_parquet(tmp_path / "s.parquet")
    b = table.load(tmp_path / "s.parquet", **{**spec, "missing_codes": [""]})
    np.testing.assert_array_equal(a.responses.responses, b.responses.responses)
    # numbers match however written: 2.0 is code 2, and the semicolon file is detected
    c = table.load(write(tmp_path, "Q1;Q2\n1;2.0\n2;1\n", "semi.csv"), items=["Q1", "Q2"])
    np.testing.assert_array_equal(c.responses.responses, [[0, 1], [1, 0]])
    assert c.person_ids == ["2", "3"]  # no id column: the person's line in the file


def test_empty_persons_dropped_and_counted_or_refused(tmp_path):
    text = GOOD + "p6,60,NA,,9,\n"
    out = table.load(write(tmp_path, text), **SPEC)
    assert out.responses.n_persons == 5 and "p6" not in out.person_ids
    counts = out.row_counts.set_index("step")
    assert counts.loc["rows in file", "persons"] == 6
    assert counts.loc["persons with a response", "removed"] == 1
    assert counts.loc["persons with a response", "reason"] == "no observed response"
    with pytest.raises(DataFormatError, match=r"survey.csv: line 7 \(person 'p6'\): no observed response"):
        table.load(write(tmp_path, text), **SPEC, empty_persons="error")


def test_split_keeps_ids_with_their_rows(tmp_path):
    out = table.load(write(tmp_path, GOOD * 1 + "".join(f"q{i},1,{1 + i % 5},2,3,4\n" for i in range(40))), **SPEC)
    parts = table.split(out, 0.25, seed=3)
    assert parts.train.n_persons + parts.holdout.n_persons == out.responses.n_persons
    assert parts.holdout.n_persons == round(0.25 * out.responses.n_persons)
    lookup = dict(zip(out.person_ids, out.responses.responses.tolist()))
    for part, rm in (("train", parts.train), ("holdout", parts.holdout)):
        ids = parts.persons[parts.persons.part == part].sort_values("row").person_id
        assert [lookup[i] for i in ids] == rm.responses.tolist()
    assert parts.row_counts.iloc[-1]["removed"] == parts.holdout.n_persons


# ----------------------------------------------------------------------------- bad input
# Each case: the message names the file, and the line and column where there is one.

BAD = {
    "column absent": (
        GOOD,
        dict(SPEC, item_pattern=None, items=["Q1", "Q7"]),
        r"survey.csv: line 1: column 'Q7' \(config key 'table.items'\) is not in the header",
    ),
    "id column absent": (
        GOOD,
        dict(SPEC, id_column="person"),
        r"survey.csv: line 1: column 'person' \(config key 'table.id_column'\)",
    ),
    "reverse key not an item": (
        GOOD,
        dict(SPEC, reverse_keyed=["age"]),
        r"survey.csv: column 'age' \(config key 'table.reverse_keyed'\)",
    ),
    "undeclared values": (
        GOOD.replace("p4,38,5,1,4,5", "p4,38,7,1,x,5"),
        SPEC,
        r"survey.csv: 2 cell\(s\) neither a declared category .* nor a missing code .*"
        r"first: line 5, column 'Q1': '7'; line 5, column 'Q3': 'x'",
    ),
    "single category": (
        GOOD.replace("1,5,2,NA", "1,5,2,2").replace(",3\n", ",2\n").replace(",1\n", ",2\n").replace(",5\n", ",2\n"),
        SPEC,
        r"survey.csv: column 'Q4': only category '2' observed",
    ),
    "duplicate ids": (
        GOOD.replace("p4,", "p2,"),
        SPEC,
        r"survey.csv: line 5, column 'id': person id 'p2' repeats line 3",
    ),
    "wrong delimiter": (
        GOOD.replace(",", ";"),
        dict(SPEC, delimiter=","),
        r"survey.csv: line 1 is a single column when split on comma; the header looks semicolon-separated",
    ),
    "ragged row": (
        GOOD.replace("p3,25,9,3,3,1", "p3,25,9,3,3,1,7"),
        SPEC,
        r"survey.csv: line 4 has 7 fields, the header has 6",
    ),
    "header only": ("id,age,Q1,Q2,Q3,Q4\n", SPEC, r"survey.csv: header only, no persons"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_file_line_and_column(tmp_path, case):
    text, spec, message = BAD[case]
    with pytest.raises(DataFormatError, match=message) as err:
        table.load(write(tmp_path, text), **spec)
    assert "\n" not in str(err.value)


def test_missing_file_and_files_that_are_not_tables(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"nothere.csv: file not found \(config key 'table.file'\)"):
        table.load(tmp_path / "nothere.csv", **SPEC)
    (tmp_path / "image.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(DataFormatError, match=r"image.csv: not a text table \(binary content: NUL byte at offset 8\)"):
        table.load(tmp_path / "image.csv", **SPEC)
    (tmp_path / "latin.csv").write_bytes("Q1,Q2\n1,2\n2,caf\xe9\n".encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"latin.csv: line 3: not UTF-8 text"):
        table.load(tmp_path / "latin.csv", items=["Q1", "Q2"])
    write(tmp_path, GOOD, "fake.parquet")
    with pytest.raises(DataFormatError, match=r"fake.parquet: not a readable parquet file"):
        table.load(tmp_path / "fake.parquet", **SPEC)
    write(tmp_path, "", "empty.csv")
    with pytest.raises(DataFormatError, match=r"empty.csv: empty file, not a table"):
        table.load(tmp_path / "empty.csv", **SPEC)


def test_parquet_rows_are_named_as_rows(tmp_path):
    df = pd.DataFrame({"Q1": [1, 2, 6], "Q2": [1, 2, 2]})
    df.to_parquet(tmp_path / "s.parquet")
    with pytest.raises(DataFormatError, match=r"s.parquet: 1 cell\(s\) .* first: row 3, column 'Q1': '6'"):
        table.load(tmp_path / "s.parquet", items=["Q1", "Q2"], coding={"integers_from": 1, "n_categories": 5})


def test_prepared_matrix_round_trips_through_the_shared_format(tmp_path):
    out = table.load(write(tmp_path, GOOD), **SPEC)
    io.write_responses(out.responses, tmp_path / "responses.parquet")
    back = io.read_responses(tmp_path / "responses.parquet")
    np.testing.assert_array_equal(back.responses, out.responses.responses)
    assert back.items == out.responses.items


def test_config_schema_and_checks_of_a_table_data_set():
    import copy
    from pathlib import Path

    import yaml
    from snakemake.utils import validate

    from bayesirt.config import ConfigError, check
    from bayesirt.studies.amortized_ifa import settings as ifa_settings

    root = Path(__file__).resolve().parents[2]
    schema = root / "workflow/schemas/config.schema.yaml"
    example = yaml.safe_load((root / "config/examples/own_data.yaml").read_text())
    check(example, schema)
    # amortized_ifa needs held-out persons: a table data set without them is refused by name
    # (by the study's check, which reads the config with the schema's defaults filled in)
    example["datasets"]["bfi"]["holdout_fraction"] = 0
    check(example, schema)
    filled = copy.deepcopy(example)
    validate(filled, str(schema), set_default=True)
    with pytest.raises(
        ConfigError,
        match=r"studies.amortized_ifa.designs.bfi_cfa.dataset': 'bfi' is not a data set "
        r"with held-out persons",
    ):
        ifa_settings.check(filled)
    example["datasets"]["bfi"].update(holdout_fraction=0.1, items=["A1", "A2"])  # items and item_pattern
    with pytest.raises(ConfigError, match=r"config key 'datasets.bfi'"):
        check(example, schema)
    del example["datasets"]["bfi"]["items"]
    example["datasets"]["bfi"]["coding"] = {"labels": ["lo", "hi"], "n_categories": 2}
    with pytest.raises(ConfigError, match=r"config key 'datasets.bfi.coding'"):
        check(example, schema)
