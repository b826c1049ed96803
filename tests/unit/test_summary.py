"""Trace files' summaries (paradise.format.summary): the writers put overview_pe's rows of each file
into its footer, and the engines answer overview_pe from them only where they equal what the query
over the rows gives; every expected table here is that query run over the files' rows."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from paradise.cli.merge import merge_trace
from paradise.engines import load_sql
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.engines.summary import SummaryBuilder
from paradise.format import SCHEMA, WRITE_OPTIONS, conform, make_metadata
from paradise.format import summary as file_summary
from paradise.format.summary import KEY, SUMMARY_SCHEMA, SummarizingWriter, encode_summary
from paradise.importers.kineto import import_trace
from paradise.store import open_trace
from tests.conftest import bin_path


def _from_rows(path: Path) -> pa.Table:
    """overview_pe computed from the trace's rows (the query's text, not the engine's query())."""
    with DuckDBEngine(open_trace(path)) as eng:
        return eng.sql(load_sql("overview_pe"))


def _answered(path: Path) -> tuple[pa.Table, bool]:
    """The engine's overview_pe and whether every file had a summary it could use."""
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        return eng.query("overview_pe"), trace.summaries(trace.sql_files()) is not None


def _synth(tmp_path: Path, kind: str, **opts: str) -> Path:
    out = tmp_path / kind
    args = [bin_path("paradise"), "synth", "-o", str(out), "--kind", kind, "--events", "20000", "--pes", "4",
            "--seed", "5"]
    for k, v in opts.items():
        args += [f"--{k}", v]
    subprocess.run(args, check=True, capture_output=True)
    return out


@pytest.mark.parametrize("kind", ["charm", "torch"])
def test_synth_files_carry_summaries_equal_to_the_query_over_their_rows(tmp_path, kind):
    trace = _synth(tmp_path, kind)
    got, used = _answered(trace)
    assert used
    want = _from_rows(trace)
    assert want.num_rows > 10
    assert got.equals(want)
    assert got.schema.equals(SUMMARY_SCHEMA)
    assert _info(trace)["summaries"] == {"files": 4, "used": True}


def _info(trace: Path) -> dict:
    done = subprocess.run([bin_path("paradise"), "info", "--json", str(trace)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _assert_summarized(out: Path) -> None:
    """The engine answered overview_pe from `out`'s summaries, and they equal the query over its rows."""
    got, used = _answered(out)
    assert used
    want = _from_rows(out)
    assert want.num_rows > 0
    assert got.equals(want)


def test_a_merged_trace_carries_its_summary(tmp_path):
    trace = _synth(tmp_path, "charm")
    merged = merge_trace(trace, tmp_path / "merged.parquet")
    got, used = _answered(merged)
    assert used
    assert got.equals(_from_rows(merged))
    assert got.equals(_from_rows(trace))


def test_an_imported_kineto_trace_carries_its_summary(real_data, tmp_path, monkeypatch):
    src = real_data / "hta" / "tests" / "data" / "nccl_parser_config" / "nccl_data.json.gz"
    small = import_trace([src], tmp_path / "small.parquet")
    assert not _answered(small)[1]  # under MIN_ROWS rows: none (the import does not load DuckDB)
    monkeypatch.setattr(file_summary, "MIN_ROWS", pq.ParquetFile(small).metadata.num_rows)
    out = import_trace([src], tmp_path / "k.parquet")
    _assert_summarized(out)


def test_an_imported_projections_trace_carries_its_summary(real_data, tmp_path):
    from paradise.importers.projections import import_trace as import_projections

    out = import_projections(real_data / "pipit/pipit/tests/data/ping-pong-projections", tmp_path / "p.parquet")
    _assert_summarized(out)


def test_an_imported_nsys_trace_carries_its_summary(real_data, tmp_path, monkeypatch):
    from paradise.importers.nsys import import_trace as import_nsys

    monkeypatch.setattr(file_summary, "MIN_ROWS", 0)
    src = real_data / "pipit/pipit/tests/data/cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite"
    out = import_nsys([src], tmp_path / "n.parquet")
    _assert_summarized(out)


def test_the_dask_engine_answers_from_the_summaries_as_the_rows_would(tmp_path):
    from paradise.engines.dask_engine import DaskEngine

    trace = _synth(tmp_path, "torch")
    with DaskEngine(open_trace(trace), files_per_task=1) as eng:
        got = eng.query("overview_pe")
    assert got.equals(_from_rows(trace))


def _rewrite(src: Path, dst: Path, change, summary: bytes) -> None:
    """`src`'s rows through `change`, written with `src`'s summary carried over unchanged (what a
    tool that copies the footer's key-value metadata would leave)."""
    table = change(pq.read_table(src))
    with pq.ParquetWriter(dst, table.schema, **WRITE_OPTIONS) as w:
        w.write_table(table)
        w.add_key_value_metadata({KEY: summary})


def _renamed(t: pa.Table) -> pa.Table:
    names = pc.if_else(pc.equal(t["name"].cast(pa.string()), pc.max(t["name"].cast(pa.string()))), "zz renamed",
                       t["name"].cast(pa.string()))
    return t.set_column(t.schema.get_field_index("name"), "name", names.cast(t.schema.field("name").type))


@pytest.mark.parametrize("change", [
    pytest.param(lambda t: t.slice(0, t.num_rows - 7), id="rows dropped"),
    pytest.param(lambda t: t.set_column(t.schema.get_field_index("t0"), "t0", pc.add(t["t0"], 1000)),
                 id="times shifted"),
    pytest.param(_renamed, id="name renamed"),
])
def test_a_summary_that_disagrees_with_its_file_is_not_used(tmp_path, change):
    trace = _synth(tmp_path, "torch")
    f = sorted(trace.glob("*.parquet"))[0]
    summary = pq.ParquetFile(f).metadata.metadata[KEY]
    edited = tmp_path / "edited.parquet"
    _rewrite(f, edited, change, summary)
    f.unlink()
    edited.rename(f)
    got, used = _answered(trace)
    assert not used
    assert got.equals(_from_rows(trace))


def test_a_merged_files_summary_with_other_pes_is_not_used(tmp_path):
    """A merged file holds every PE's rows (its metadata names none): PEs renumbered so that the
    smallest changes fail the summary's check against the footer's pe statistics."""
    merged = merge_trace(_synth(tmp_path, "charm"), tmp_path / "merged.parquet")
    summary = pq.ParquetFile(merged).metadata.metadata[KEY]
    edited = tmp_path / "edited.parquet"
    _rewrite(merged, edited, lambda t: t.set_column(t.schema.get_field_index("pe"), "pe",  # PE 0's rows as PE 1's
                                                    pc.max_element_wise(t["pe"], pa.scalar(1, pa.int32()))), summary)
    edited.replace(merged)
    got, used = _answered(merged)
    assert not used
    assert got.equals(_from_rows(merged))


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return base64.b64encode(sink.getvalue().to_pybytes())


@pytest.mark.parametrize("raw", [
    pytest.param(b"not base64 at all!", id="not base64"),
    pytest.param(base64.b64encode(b"\x00" * 64), id="not an IPC stream"),
    pytest.param(_ipc(pa.table({"kind": ["exec"], "rows": [1]})), id="other columns"),
])
def test_a_damaged_summary_is_ignored_and_the_rows_read(tmp_path, raw):
    trace = _synth(tmp_path, "charm")
    f = sorted(trace.glob("*.parquet"))[1]
    _rewrite(f, tmp_path / "x.parquet", lambda t: t, raw)
    (tmp_path / "x.parquet").replace(f)
    got, used = _answered(trace)
    assert not used
    assert got.equals(_from_rows(trace))
    doc = subprocess.run([bin_path("paradise"), "analyze", "--json", "--only", "overview", str(trace)],
                         capture_output=True, text=True)
    assert doc.returncode == 0, doc.stderr
    assert json.loads(doc.stdout)["characteristics"]


T0 = [1_000_000, 5_000_000, 9_000_000]


def _clocked_file(path: Path, pe: int, entry: dict) -> None:
    """Three exec rows of PE `pe` with a clock offset entry and a summary of the rows as written."""
    table = conform(pa.table({"kind": ["exec"] * 3, "pe": pa.array([pe] * 3, pa.int32()), "t0": T0,
                              "t1": pa.array([t + 500_000 for t in T0], pa.int64()), "name": ["work"] * 3}))
    clock = {"method": "ping_min_rtt", "residual_ns": 0, "offsets": {str(pe): entry}}
    meta = make_metadata(source="synthetic", pe=pe, pes=2, complete=True, clock=clock)
    with SummarizingWriter(path / f"pe-{pe:05d}.parquet", SCHEMA.with_metadata(meta), SummaryBuilder(),
                           **WRITE_OPTIONS) as w:
        w.write_table(table.replace_schema_metadata(meta))


def test_a_file_with_a_clock_correction_is_read_not_summarized(tmp_path):
    _clocked_file(tmp_path, 0, {"t_start": 0, "start_ns": 0, "t_end": 9, "end_ns": 0, "error_ns": 0})
    _clocked_file(tmp_path, 1, {"t_start": 1_000_000, "start_ns": 3_000_000, "t_end": 11_000_000,
                                "end_ns": 1_000_000, "error_ns": 7_000})
    trace = open_trace(tmp_path)
    assert all(trace.summary(f) is not None for f in trace.sql_files())  # both files carry one
    got, used = _answered(tmp_path)
    assert not used
    want = _from_rows(tmp_path)
    assert got.equals(want)
    pe1 = [r for r in want.to_pylist() if r["pe"] == 1]
    assert pe1[0]["t_first"] == T0[0] + 3_000_000  # the corrected time, not the file's
    assert _info(tmp_path)["summaries"] == {"files": 2, "used": False}


def test_an_empty_file_has_an_empty_summary(tmp_path):
    meta = make_metadata(source="synthetic", pe=0, pes=1, complete=True)
    with SummarizingWriter(tmp_path / "pe-00000.parquet", SCHEMA.with_metadata(meta), SummaryBuilder(), **WRITE_OPTIONS):
        pass
    got, used = _answered(tmp_path)
    assert used
    assert got.num_rows == 0
    assert encode_summary(SUMMARY_SCHEMA.empty_table()) == {KEY: pq.ParquetFile(
        tmp_path / "pe-00000.parquet").metadata.metadata[KEY]}


def test_a_writer_left_by_an_error_closes_without_a_summary(tmp_path):
    """SummarizingWriter: the footer entry goes in at a clean close only, and covers every table
    written (two here); none when the writer was given no summary."""
    meta = make_metadata(source="synthetic", pe=0, pes=1, complete=True)
    first = conform(pa.table({"kind": ["exec"] * 2, "pe": pa.array([0, 0], pa.int32()), "t0": [1, 5],
                              "t1": pa.array([3, 9], pa.int64()), "name": ["a", "b"]}))
    second = conform(pa.table({"kind": ["send"], "pe": pa.array([0], pa.int32()), "t0": [7], "name": ["b"],
                               "bytes": pa.array([64], pa.int64())}))
    schema = SCHEMA.with_metadata(meta)
    with SummarizingWriter(tmp_path / "pe-00000.parquet", schema, SummaryBuilder(), **WRITE_OPTIONS) as w:
        w.write_table(first.replace_schema_metadata(meta))
        w.write(second.replace_schema_metadata(meta).to_batches()[0])  # a batch: through write_table too
    got, used = _answered(tmp_path)
    assert used
    assert got.equals(_from_rows(tmp_path))
    assert sum(got.column("rows").to_pylist()) == 3
    failed = tmp_path / "failed"
    failed.mkdir()
    with pytest.raises(RuntimeError):
        with SummarizingWriter(failed / "pe-00000.parquet", schema, SummaryBuilder(), **WRITE_OPTIONS) as w:
            w.write_table(first.replace_schema_metadata(meta))
            raise RuntimeError("the writer's caller failed")
    assert KEY not in (pq.ParquetFile(failed / "pe-00000.parquet").metadata.metadata or {})
    plain = tmp_path / "plain"
    plain.mkdir()
    with SummarizingWriter(plain / "pe-00000.parquet", schema, None, **WRITE_OPTIONS) as w:
        w.write_table(first.replace_schema_metadata(meta))
    assert KEY not in (pq.ParquetFile(plain / "pe-00000.parquet").metadata.metadata or {})
