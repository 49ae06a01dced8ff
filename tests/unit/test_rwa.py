"""RWA loader: the real file (when present) and small hand-made files in the same format."""

import os
from pathlib import Path

import numpy as np
import pytest

from bayesirt.data import rwa
from bayesirt.io import DataFormatError

ROOT = Path(__file__).resolve().parents[2]
REAL = Path(os.environ.get("BAYESIRT_RWAS", ROOT / ".." / "shared" / "data" / "RWAS" / "data.csv"))
needs_real = pytest.mark.skipif(
    not REAL.exists(),
    reason=(f"real RWA file not found at {REAL} (set BAYESIRT_RWAS or place RWAS/data.csv beside the checkout)"),
)

OTHER = ["E1", "testelapse", "major"]


def write(tmp_path, rows, header=None, name="data.csv"):
    header = header or rwa.ITEMS + OTHER
    lines = [",".join(header)] + [",".join(str(v) for v in r) for r in rows]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def full_rows(n=9, seed=0):
    """n rows whose items together show every code 1..9 (so all categories are observed)."""
    rng = np.random.default_rng(seed)
    base = (np.arange(n)[:, None] + np.arange(22)[None, :]) % 9 + 1
    base = base[rng.permutation(n)]
    return [list(r) + [100, 200, '"Law, and order"'] for r in base]


@needs_real
def test_real_file_counts():
    rm = rwa.load(REAL)
    s = rwa.summary(rm)
    assert s["persons"] == 9881 and s["items"] == 22 and s["categories"] == [9]
    assert s["missing_cells"] == 352 and s["persons_with_missing"] == 201
    assert s["persons_without_response"] == 3
    assert s["reverse_keyed"] == ["Q4", "Q6", "Q8", "Q9", "Q11", "Q13", "Q15", "Q18", "Q20", "Q21"]
    assert s["scale_sizes"] == {"pro_trait": 12, "con_trait": 10}
    assert rm.responses.min() == -1 and rm.responses.max() == 8
    # reverse-keyed items correlate negatively with the pro-trait item Q1 in the raw coding,
    # positively after re-orientation (a check that the key is the right one)
    y = rm.responses.astype(float)
    ok = (rm.responses >= 0).all(1)
    rev = [it.reverse_keyed for it in rm.items]
    c = np.corrcoef(y[ok].T)[0]
    assert np.all(c[rev] < -0.2) and np.all(c[1:][~np.array(rev)[1:]] > 0.2)
    ro = rwa.load(REAL, reorient=True)
    assert ro.attrs["reoriented"] is True
    assert np.array_equal(ro.responses[:, 3], np.where(rm.responses[:, 3] < 0, -1, 8 - rm.responses[:, 3]))
    assert np.array_equal(ro.responses[:, 0], rm.responses[:, 0])
    assert rwa.load(REAL, drop_empty_persons=True).n_persons == 9878


def test_codes_shift_and_zero_is_missing(tmp_path):
    rows = full_rows()
    rows.append(list(rows[0]))  # a copy, so every code still appears after blanking one cell
    rows[0][4] = 0
    rm = rwa.load(write(tmp_path, rows))
    assert rm.n_persons == 10 and rm.n_items == 22
    assert rm.responses[0, 4] == -1
    assert rm.responses[1, 0] == rows[1][0] - 1
    assert rm.attrs["n_missing_cells"] == 1 and rm.attrs["n_persons_with_missing"] == 1
    assert [it.scale for it in rm.items][:4] == ["pro_trait", "pro_trait", "pro_trait", "con_trait"]


@pytest.mark.parametrize(
    "cell, message",
    [
        ("10", r"line 3, column 'Q2': code 10 out of range"),
        ("x", r"line 3, column 'Q2': non-numeric cell 'x'"),
        ("", r"line 3, column 'Q2': empty or non-numeric"),
        ("2.5", r"line 3, column 'Q2': code 2.5 out of range"),
    ],
)
def test_bad_cells_name_line_and_column(tmp_path, cell, message):
    rows = full_rows()
    rows[1][1] = cell
    with pytest.raises(DataFormatError, match=message):
        rwa.load(write(tmp_path, rows))


def test_wrong_field_count_empty_file_missing_column(tmp_path):
    rows = full_rows()
    rows[2] = rows[2][:-2]
    with pytest.raises(DataFormatError, match=r"line 4 has 23 fields, the header has 25"):
        rwa.load(write(tmp_path, rows))
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(DataFormatError, match="empty"):
        rwa.load(empty)
    header = [c if c != "Q7" else "Q7x" for c in rwa.ITEMS + OTHER]
    with pytest.raises(DataFormatError, match=r"\['Q7'\] missing from the header"):
        rwa.load(write(tmp_path, full_rows(), header=header))


def test_item_with_unobserved_category(tmp_path):
    rows = full_rows()
    for r in rows:
        if r[5] == 9:
            r[5] = 8
    with pytest.raises(DataFormatError, match=r"item 'Q6' never shows category \[8\]"):
        rwa.load(write(tmp_path, rows))
    rm = rwa.load(write(tmp_path, rows), require_all_categories=False)
    assert rm.responses[:, 5].max() == 7


def test_bad_code_in_the_users_file_is_reported_there(tmp_path):
    # the workflow copies the user's file to its cache (download.fetch) and reads the copy: the
    # message must still name the user's file, with the line and column of the bad cell
    import zipfile

    from bayesirt.data import download

    rows = full_rows()
    rows[4][3] = "12"
    mine = write(tmp_path, rows, name="my_rwa.csv")
    cache = tmp_path / "cache"
    cache.mkdir()
    record = download.fetch(str(mine), cache / "download")
    with pytest.raises(DataFormatError) as err:
        with download.raw_csv(cache / "download", "RWAS/data.csv", source=download.source_of(record)) as csv:
            rwa.load(csv)
    assert str(err.value).startswith(f"{mine}: line 6, column 'Q4': code 12 out of range")
    # a zip archive: the archive as configured (here a file:// URL) and the member inside it
    archive = tmp_path / "my_rwa.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(mine, "RWAS/data.csv")
    record = download.fetch(archive.as_uri(), cache / "zipped")
    with pytest.raises(DataFormatError, match=rf"^{archive.as_uri()} \(member RWAS/data.csv\): line 6, column 'Q4'"):
        with download.raw_csv(cache / "zipped", "RWAS/data.csv", source=download.source_of(record)) as csv:
            rwa.load(csv)
