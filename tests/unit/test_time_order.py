"""docs/trace-format.md, "Row order": every writer leaves each PE's rows in time order (t0 never
decreasing within a PE, equal starts in written order). Checked here on what each writer really
writes, with a check of its own (numpy over the files' pe and t0 columns, not paradise's code)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paradise.format import SCHEMA
from paradise.format.order import NotInTimeOrder, merge_time_ordered, time_ordered
from tests.builders import charm_like
from tests.integration.charm_helpers import PROGRAMS, require_ok, trace_charm
from tests.trace_writer import TraceWriter

HTA = Path("hta/tests/data")
PIPIT = Path("pipit/pipit/tests/data")


def order_breaks(path: Path) -> dict[str, int]:
    """Per file: the places where a row starts before the row written just before it on its PE."""
    files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
    assert files, f"no Parquet files at {path}"
    out = {}
    for f in files:
        t = pq.ParquetFile(f).read(columns=["pe", "t0"])
        pe = t.column("pe").to_numpy(zero_copy_only=False)
        t0 = t.column("t0").to_numpy(zero_copy_only=False)
        out[f.name] = int(((pe[1:] == pe[:-1]) & (t0[1:] < t0[:-1])).sum())
    return out


def test_the_check_sees_rows_out_of_order(tmp_path):
    t = pa.table({"pe": pa.array([0, 0, 1, 1, 0], pa.int32()), "t0": pa.array([5, 3, 1, 2, 9], pa.int64())})
    pq.write_table(t, tmp_path / "x.parquet")
    assert order_breaks(tmp_path / "x.parquet") == {"x.parquet": 1}  # 5 -> 3 on PE 0; PE 1 after PE 0 is fine


def _row(t0: int, name: str) -> dict:
    return {"kind": "exec", "pe": 0, "t0": t0, "t1": t0 + 1, "name": name}


def test_the_writer_compacts_rows_appended_as_events_ended_into_time_order(tmp_path):
    # an exec appended when it ends, after the sends it made; parts flushed every 3 rows
    appended = [(10, "a"), (12, "b"), (5, "outer"), (20, "c"), (20, "d"), (1, "main"), (30, "e")]
    w = TraceWriter(tmp_path, 0, flush_rows=3, source="synthetic", program="p", pes=1)
    for t0, name in appended:
        w.append_dict(**_row(t0, name))
    final = w.close()
    t = pq.read_table(final)
    assert order_breaks(tmp_path) == {"pe-00000.parquet": 0}
    want = sorted(appended, key=lambda r: r[0])  # Python's sort is stable: (20, c) before (20, d)
    assert list(zip(t.column("t0").to_pylist(), t.column("name").to_pylist())) == want
    assert t.schema.equals(SCHEMA, check_metadata=False)  # dictionary columns survive the sort
    assert not list(tmp_path.glob(".*")) and not list(tmp_path.glob("*.part-*"))  # no scratch left


def test_time_ordered_keeps_rows_already_in_order(tmp_path):
    rows = [pa.Table.from_pylist([_row(t, str(t)) for t in ts], schema=SCHEMA) for ts in ([1, 2], [2, 7, 9])]
    got = pa.concat_tables(time_ordered(rows, SCHEMA, tmp_path / "s.arrow", batch_rows=2))
    assert got.column("t0").to_pylist() == [1, 2, 2, 7, 9] and got.column("name").to_pylist() == ["1", "2", "2", "7", "9"]
    assert not (tmp_path / "s.arrow").exists()


@pytest.mark.parametrize("seed", range(6))
def test_merging_streams_in_time_order_equals_the_sort_of_their_concatenation(tmp_path, seed):
    # streams each in time order, many equal starts within and across streams, batches of any size;
    # the oracle is the spill sort of their concatenation (stable: stream order, then row order)
    rng = np.random.default_rng(seed)
    streams = []
    for s in range(int(rng.integers(1, 6))):
        t0 = np.sort(rng.integers(0, 40, int(rng.integers(0, 60))))
        cuts = np.sort(rng.integers(0, t0.size + 1, int(rng.integers(0, 5))))
        streams.append([pa.Table.from_pylist([_row(int(t), f"{s}.{i}") for i, t in zip(part, t0[part])],
                                             schema=SCHEMA) for part in np.split(np.arange(t0.size), cuts)])
    want = pa.concat_tables(time_ordered([t for s in streams for t in s], SCHEMA, tmp_path / "s.arrow", batch_rows=7))
    got = list(merge_time_ordered(streams, SCHEMA, batch_rows=int(rng.integers(1, 30))))
    assert pa.concat_tables(got).to_pylist() == want.to_pylist()
    assert all(c.num_chunks == 1 for t in got for c in t.columns)  # one chunk a table, as the writers want


def test_merging_refuses_a_stream_out_of_time_order():
    ok = [pa.Table.from_pylist([_row(t, "a") for t in (1, 5)], schema=SCHEMA)]
    late = [pa.Table.from_pylist([_row(2, "b")], schema=SCHEMA), pa.Table.from_pylist([_row(1, "c")], schema=SCHEMA)]
    with pytest.raises(NotInTimeOrder):
        list(merge_time_ordered([ok, late], SCHEMA))
    with pytest.raises(NotInTimeOrder):
        list(merge_time_ordered([[pa.Table.from_pylist([_row(3, "d"), _row(2, "e")], schema=SCHEMA)]], SCHEMA))


def test_a_real_charm4py_run_is_in_time_order(tmp_path):
    out = tmp_path / "ring"
    require_ok(trace_charm(out, PROGRAMS / "ring.py", "20"))
    breaks = order_breaks(out)
    assert len(breaks) == 2 and set(breaks.values()) == {0}


@pytest.mark.parametrize("kind", ["charm", "torch"])
def test_synth_is_in_time_order(tmp_path, kind):
    from paradise.synth import synth

    synth(tmp_path / "s", kind=kind, events=20_000, pes=3)
    assert set(order_breaks(tmp_path / "s").values()) == {0}


@pytest.mark.parametrize("source", [
    HTA / "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",  # 119 of 868 rows were out of order
    HTA / "trace_file_list/inference_rank_1.json.gz",
])
def test_kineto_import_is_in_time_order(tmp_path, real_data, source):
    from paradise.importers import IMPORTERS

    out = IMPORTERS["kineto"].import_trace([real_data / source], tmp_path / "k.parquet")
    assert order_breaks(out) == {"k.parquet": 0}


@pytest.mark.parametrize("source", [
    PIPIT / "saxpy-mpi-cuda_nsys_perlmutter0.sqlite",  # 3 of 137 rows were out of order
    PIPIT / "cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite",  # 4 of 7,782
])
def test_nsys_import_is_in_time_order(tmp_path, real_data, source):
    from paradise.importers import IMPORTERS

    out = IMPORTERS["nsys"].import_trace([real_data / source], tmp_path / "n.parquet")
    assert order_breaks(out) == {"n.parquet": 0}


def test_projections_import_is_in_time_order(tmp_path, real_data):
    from paradise.importers import IMPORTERS

    out = IMPORTERS["projections"].import_trace([real_data / PIPIT / "ping-pong-projections"], tmp_path / "p.parquet")
    assert order_breaks(out) == {"p.parquet": 0}


def test_merge_puts_a_crashed_runs_parts_in_time_order(tmp_path):
    from paradise.cli.merge import merge_trace

    src = tmp_path / "crashed"
    charm_like(pes=3, steps=2).write(src, parts_per_pe=2, complete=False)
    for part in src.glob("*.part-000001.parquet"):  # the second part's rows start before the first's
        t = pq.read_table(part)
        pq.write_table(t.set_column(t.schema.get_field_index("t0"), "t0", pa.compute.subtract(t.column("t0"), 10**6)),
                       part)
    assert sum(order_breaks(src).values()) == 0  # each part is ordered on its own ...
    out = merge_trace(src, tmp_path / "m.parquet")
    assert order_breaks(out) == {"m.parquet": 0}
    assert pq.ParquetFile(out).metadata.num_rows == sum(pq.ParquetFile(p).metadata.num_rows for p in src.glob("*.parquet"))
