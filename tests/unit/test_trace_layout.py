"""The trace files' layout on disk (paradise.format.WRITE_OPTIONS): every paradise writer delta-encodes
the time and id columns, and files in another layout (the zstd-only files written before) read the same."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paradise.cli.merge import merge_trace
from paradise.format import DELTA_COLUMNS, LOW_CARDINALITY_STRINGS
from paradise.format.compact import convert
from paradise.synth import synth
from tracers.spool import Spool

OLD_LAYOUT = {"compression": "zstd", "use_dictionary": LOW_CARDINALITY_STRINGS}


def _layout(path) -> dict[str, tuple[tuple[str, ...], str]]:
    """Per column of the file's first row group: (encodings, compression)."""
    rg = pq.ParquetFile(path).metadata.row_group(0)
    return {rg.column(i).path_in_schema: (rg.column(i).encodings, rg.column(i).compression)
            for i in range(rg.num_columns)}


def _assert_format_layout(path) -> None:
    layout = _layout(path)
    for name in DELTA_COLUMNS:
        encodings, compression = layout[name]
        assert "DELTA_BINARY_PACKED" in encodings and compression == "UNCOMPRESSED", (path, name, layout[name])
    assert "RLE_DICTIONARY" in layout["kind"][0] and layout["kind"][1] == "ZSTD", (path, layout["kind"])
    assert "DELTA_BINARY_PACKED" not in layout["bytes"][0] and layout["bytes"][1] == "ZSTD", (path, layout["bytes"])


def test_spool_conversion_synth_and_merge_write_the_format_layout(tmp_path):
    """A converted spool, a synth trace and a merged trace: t0, t1, exec_t0 and msg delta-encoded
    and uncompressed, the rest as before (dictionary strings, zstd); the values come back as written."""
    t0 = np.arange(0, 5_000, 7, dtype=np.int64) * 1_000 + 10**15
    rows = np.stack([np.zeros_like(t0), np.zeros_like(t0), t0, t0 + 900, np.arange(len(t0)) + 2**40], axis=1)
    sp = Spool(tmp_path / "spool", "pe-00000", ("kind", "pe", "t0", "t1", "msg"), {"tid": 0},
               {"source": "charm4py", "program": "p", "pes": 1, "pe": 0})
    sp.write(rows.astype("<i8").tobytes(), ["exec"], [])
    sp.close(True)
    final, n = convert(sp.path)
    _assert_format_layout(final)
    table = pq.read_table(final, columns=["t0", "t1", "msg"])
    assert n == len(t0)
    assert table.column("t0").to_pylist() == t0.tolist()
    assert table.column("t1").to_pylist() == (t0 + 900).tolist()
    assert table.column("msg").to_pylist() == (np.arange(len(t0)) + 2**40).tolist()

    synth(tmp_path / "synth", events=20_000, pes=2, seed=3)
    files = sorted((tmp_path / "synth").glob("*.parquet"))
    assert len(files) == 2
    for f in files:
        _assert_format_layout(f)
    _assert_format_layout(merge_trace(tmp_path / "synth", tmp_path / "merged.parquet"))


def _without_path(doc: dict) -> dict:
    doc["trace"].pop("path")
    return doc


def test_a_trace_in_the_older_zstd_layout_analyzes_the_same(tmp_path, cli):
    """The same rows rewritten zstd-only (the layout of traces written before WRITE_OPTIONS):
    `paradise analyze --json` gives the same document."""
    synth(tmp_path / "new", events=20_000, pes=4, seed=5)
    (tmp_path / "old").mkdir()
    for f in sorted((tmp_path / "new").iterdir()):
        if f.suffix == ".parquet":
            pq.write_table(pq.read_table(f), tmp_path / "old" / f.name, **OLD_LAYOUT)
        else:
            (tmp_path / "old" / f.name).write_bytes(f.read_bytes())
    assert _layout(tmp_path / "old" / "pe-00000.parquet")["t0"][1] == "ZSTD"
    docs = []
    for d in ("new", "old"):
        code, out, err = cli("analyze", tmp_path / d, "--json")
        assert code == 0, err
        docs.append(_without_path(json.loads(out)))
    assert docs[0] == docs[1]
    assert docs[0]["analyses"]


def test_importers_write_the_format_layout(tmp_path, cli, real_data):
    """`paradise import kineto` and `paradise import projections` on real third-party traces."""
    sources = {"kineto": real_data / "hta" / "tests" / "data" / "trace_filter" / "sampled_rank-0.json.gz",
               "projections": real_data / "pipit" / "pipit" / "tests" / "data" / "ping-pong-projections" / "pingpong.prj.sts"}
    for kind, source in sources.items():
        out = tmp_path / f"{kind}.parquet"
        code, _, err = cli("import", kind, source, "-o", out)
        assert code == 0, err
        _assert_format_layout(out)


def test_delta_columns_keep_int64_extremes_and_nulls(tmp_path):
    """Deltas between int64 extremes overflow; the layout must still give every value back, to pyarrow
    and to DuckDB (the engines' reader)."""
    import duckdb

    from paradise.format import WRITE_OPTIONS

    values = [-(2**63), 2**63 - 1, 0, -(2**63), 2**63 - 1, -1, 1, None, 2**62, -(2**62)] * 300
    table = pa.table({name: pa.array(values if i % 2 else values[::-1], pa.int64()) for i, name in enumerate(DELTA_COLUMNS)})
    path = tmp_path / "extremes.parquet"
    pq.write_table(table, path, **WRITE_OPTIONS)
    assert all("DELTA_BINARY_PACKED" in enc for enc, _ in _layout(path).values())
    assert pq.read_table(path).equals(table)
    rows = duckdb.sql(f"SELECT {', '.join(DELTA_COLUMNS)} FROM read_parquet('{path}')").fetchall()
    assert [list(r) for r in zip(*rows)] == [table.column(c).to_pylist() for c in DELTA_COLUMNS]
