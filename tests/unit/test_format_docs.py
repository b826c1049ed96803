"""docs/trace-format.md documents exactly what paradise/format defines: columns (with types),
metadata fields and kinds."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from paradise.format import COLUMNS, FORMAT_VERSION, METADATA_FIELDS, OUTPUTS_FILE, Kind

DOC = Path(__file__).resolve().parents[2] / "docs" / "trace-format.md"


def _table_rows(section: str) -> dict[str, list[str]]:
    """First-cell name -> remaining cells, for the markdown table under `## <section>`."""
    text = DOC.read_text()
    m = re.search(rf"^## {re.escape(section)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"{DOC}: no '## {section}' section"
    rows = {}
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and re.fullmatch(r"`[^`]+`", cells[0]):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_dictionary(t) and pa.types.is_string(t.value_type):
        return "dict string"
    return str(t)


def test_every_column_documented_with_its_type():
    rows = _table_rows("Columns")
    for name, typ, _meaning in COLUMNS:
        assert name in rows, f"column {name!r} of paradise/format is not documented in {DOC}"
        assert rows[name][0] == _type_name(typ), f"column {name!r}: documented as {rows[name][0]!r}, is {typ}"
        assert rows[name][1], f"column {name!r} has no meaning in {DOC}"


def test_no_documented_column_that_does_not_exist():
    assert set(_table_rows("Columns")) == {n for n, _, _ in COLUMNS}


def test_column_order_is_the_on_disk_order():
    assert list(_table_rows("Columns")) == [n for n, _, _ in COLUMNS]


def test_every_metadata_field_documented():
    rows = _table_rows("Metadata")
    missing = sorted(set(METADATA_FIELDS) - set(rows))
    assert not missing, f"metadata fields not documented in {DOC}: {missing}"
    assert set(rows) == set(METADATA_FIELDS)


def test_every_kind_documented_with_its_columns():
    rows = _table_rows("Kinds and the columns each one uses")
    assert set(rows) == {k.value for k in Kind}
    names = {n for n, _, _ in COLUMNS}
    for kind, cells in rows.items():
        used = set(re.findall(r"`([a-z_0-9]+)`", cells[-1]))
        assert used, f"kind {kind!r}: no columns listed"
        assert used <= names, f"kind {kind!r} lists unknown columns {sorted(used - names)}"


@pytest.mark.parametrize("needle", [f"version {FORMAT_VERSION}", OUTPUTS_FILE, "pe-NNNNN.parquet",
                                    "pe-NNNNN.part-SSSSSS.parquet", "complete = false", "SUPPORTED_MAJORS"])
def test_layout_crash_safety_and_versioning_described(needle):
    assert needle in DOC.read_text()
