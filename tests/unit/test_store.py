"""Bad input through the real CLI: one line on stderr naming the file, exit code 2, no traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from paradise.format import META_KEY, SCHEMA, make_metadata, read_metadata
from paradise.store import open_trace
from tests.trace_writer import TraceWriter


def _good_trace(folder: Path, pe: int = 0) -> Path:
    w = TraceWriter(folder, pe, source="synthetic", program="good", pes=2)
    for i in range(200):
        w.append(("exec", pe, i * 1000, i * 1000 + 500))
    return w.close()


def _assert_one_line_error(cli, path: Path, *words: str) -> str:
    rc, out, err = cli("info", path)
    assert rc == 2, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and "Traceback" not in out
    assert lines[0].startswith("paradise: error: ")
    assert str(path) in lines[0]
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_missing_path(cli, tmp_path):
    _assert_one_line_error(cli, tmp_path / "nope.parquet", "no such file")


def test_non_parquet_file(cli, tmp_path):
    f = tmp_path / "notes.parquet"
    f.write_text("this is not parquet\n")
    _assert_one_line_error(cli, f, "not a Parquet file")


def test_parquet_without_paradise_metadata(cli, tmp_path):
    f = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), f)
    _assert_one_line_error(cli, f, "without paradise trace metadata")


def test_truncated_parquet(cli, tmp_path):
    good = _good_trace(tmp_path / "t")
    f = tmp_path / "cut.parquet"
    data = good.read_bytes()
    f.write_bytes(data[: len(data) // 2])
    _assert_one_line_error(cli, f, "truncated")


def test_empty_file(cli, tmp_path):
    f = tmp_path / "empty.parquet"
    f.touch()
    _assert_one_line_error(cli, f, "empty file")


def test_directory_without_traces(cli, tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "README.txt").write_text("no traces here")
    _assert_one_line_error(cli, d, "no paradise trace files")


def test_bad_file_inside_a_trace_directory_is_named(cli, tmp_path):
    d = tmp_path / "run"
    _good_trace(d, 0)
    bad = d / "pe-00001.parquet"
    bad.write_bytes(b"PAR1 killed mid-write")
    _assert_one_line_error(cli, bad, "truncated")


def test_unsupported_format_version(cli, tmp_path):
    f = tmp_path / "future.parquet"
    meta = json.loads(make_metadata(source="synthetic", program="x", pes=1)[META_KEY])
    meta["format_version"] = "9.0"
    pq.write_table(SCHEMA.empty_table().replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), f)
    _assert_one_line_error(cli, f, "9.0", "not supported")


def test_good_trace_prints_info(cli, tmp_path):
    _good_trace(tmp_path / "ok", 0)
    _good_trace(tmp_path / "ok", 1)
    rc, out, err = cli("info", tmp_path / "ok", "--json")
    assert rc == 0, err
    info = json.loads(out)
    assert info["rows"] == 400 and info["complete"] is True and info["events_by_kind"] == {"exec": 400}
    assert open_trace(tmp_path / "ok").metadata["pes_seen"] == [0, 1]


def test_merge_refuses_to_overwrite_and_merges(cli, tmp_path):
    src = tmp_path / "run"
    _good_trace(src, 1)
    _good_trace(src, 0)
    out = tmp_path / "merged.parquet"
    out.write_text("precious")
    rc, _, err = cli("merge", src, "-o", out)
    assert rc == 2 and "--force" in err and len(err.strip().splitlines()) == 1
    assert out.read_text() == "precious"
    rc, _, err = cli("merge", src, "-o", out, "--force")
    assert rc == 0, err
    t = pq.read_table(out)
    assert t.schema == SCHEMA.with_metadata(t.schema.metadata)  # the format's exact types survive
    assert t.num_rows == 400
    pe = t.column("pe").to_pylist()
    t0 = t.column("t0").to_pylist()
    assert list(zip(pe, t0)) == sorted(zip(pe, t0))  # sorted by pe, t0
    meta = read_metadata(t.schema.metadata)
    assert meta["complete"] is True and meta["pe"] is None and meta["pes"] == 2 and meta["program"] == "good"


def test_merge_of_a_crashed_run_is_incomplete(cli, tmp_path):
    src = tmp_path / "run"
    _good_trace(src, 0)
    w = TraceWriter(src, 1, flush_rows=30, source="synthetic", program="good", pes=2)
    for i in range(100):  # 3 parts flushed, 10 rows lost: the PE "crashed" without close()
        w.append(("exec", 1, i, i + 1))
    rc, _, err = cli("merge", src, "-o", tmp_path / "m.parquet")
    assert rc == 0, err
    t = pq.read_table(tmp_path / "m.parquet")
    assert t.num_rows == 200 + 90
    assert read_metadata(t.schema.metadata)["complete"] is False
