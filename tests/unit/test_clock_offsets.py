"""Per-PE clock offsets in the metadata (`clock.offsets`) are applied once, by the engines' events
view: expected times are computed here from the raw rows and the offsets."""

from __future__ import annotations

import json
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paradise.cli.merge import merge_trace
from paradise.engines.dask_engine import run_group
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.errors import NotAParadiseTrace
from paradise.format import conform, make_metadata
from paradise.store import open_trace
from tests.conftest import bin_path

T0 = [1_000_000, 5_000_000, 9_000_000]
T1 = [2_000_000, 6_000_000, None]
# PE 1: 3 ms behind PE 0 at t = 1 ms, 1 ms behind at t = 11 ms (its clock gains 200 us per ms... of 10)
ENTRY = {"t_start": 1_000_000, "start_ns": 3_000_000, "t_end": 11_000_000, "end_ns": 1_000_000, "error_ns": 7_000}


def _write(path, pe: int, clock: dict | None, exec_t0: bool = True) -> None:
    cols = {"kind": ["exec"] * 3, "pe": pa.array([pe] * 3, pa.int32()), "t0": T0, "t1": pa.array(T1, pa.int64())}
    if exec_t0:
        cols["exec_t0"] = pa.array(T0, pa.int64())
    table = conform(pa.table(cols))
    meta = make_metadata(source="synthetic", pe=pe, pes=2, complete=True, **({"clock": clock} if clock else {}))
    pq.write_table(table.replace_schema_metadata(meta), path / f"pe-{pe:05d}.parquet")


def _expected(t: int | None) -> int | None:
    if t is None:
        return None
    drift = (ENTRY["end_ns"] - ENTRY["start_ns"]) / (ENTRY["t_end"] - ENTRY["t_start"])
    return t + ENTRY["start_ns"] + round(drift * (t - ENTRY["t_start"]))


@pytest.fixture
def skewed(tmp_path):
    _write(tmp_path, 0, {"method": "ping_min_rtt", "residual_ns": 0,
                         "offsets": {"0": {"t_start": 0, "start_ns": 0, "t_end": 9, "end_ns": 0, "error_ns": 0}}})
    _write(tmp_path, 1, {"method": "ping_min_rtt", "residual_ns": 7_000, "offsets": {"1": ENTRY}})
    return tmp_path


SQL = "SELECT pe, t0, t1, exec_t0 FROM events ORDER BY pe, t0"


def test_events_view_applies_each_pes_linear_offset(skewed):
    with DuckDBEngine(open_trace(skewed)) as eng:
        rows = eng.sql(SQL).to_pylist()
    assert [(r["t0"], r["t1"], r["exec_t0"]) for r in rows if r["pe"] == 0] == list(zip(T0, T1, T0))
    assert [(r["t0"], r["t1"], r["exec_t0"]) for r in rows if r["pe"] == 1] == [
        (_expected(a), _expected(b), _expected(a)) for a, b in zip(T0, T1)
    ]


def test_dask_tasks_apply_the_same_correction(skewed):
    trace = open_trace(skewed)
    with DuckDBEngine(trace) as eng:
        whole = eng.sql(SQL).to_pylist()
    parts = [run_group([str(f)], SQL, {}, trace.corrections).to_pylist() for f in trace.files]
    assert [r for part in parts for r in part] == whole


def test_traces_without_offsets_read_unchanged(tmp_path):
    _write(tmp_path, 0, {"method": "unaligned", "residual_ns": None})
    _write(tmp_path, 1, None, exec_t0=False)  # an older minor: no exec_t0 column either
    trace = open_trace(tmp_path)
    assert trace.corrections == {}
    with DuckDBEngine(trace) as eng:
        rows = eng.sql(SQL).to_pylist()
    assert [(r["t0"], r["t1"]) for r in rows] == list(zip(T0, T1)) * 2


def test_older_charm_traces_read_unchanged(tmp_path):
    """The charm tracer's clock before it wrote offsets: an exit-time offset recorded, not applied."""
    old = {"method": "host-monotonic; offset to PE 0 measured by ping at exit, not applied",
           "offset_ns": -123_456, "residual_ns": 9_000}
    _write(tmp_path, 0, old)
    _write(tmp_path, 1, old)
    trace = open_trace(tmp_path)
    assert trace.corrections == {}
    with DuckDBEngine(trace) as eng:
        rows = eng.sql(SQL).to_pylist()
    assert [(r["t0"], r["t1"]) for r in rows] == list(zip(T0, T1)) * 2


def test_merged_file_is_corrected_once(skewed, tmp_path_factory):
    out = tmp_path_factory.mktemp("merged") / "m.parquet"
    merge_trace(skewed, out)
    merged = open_trace(out)
    assert merged.corrections == {} and merged.metadata["clock"]["applied"] is True
    with DuckDBEngine(merged) as a, DuckDBEngine(open_trace(skewed)) as b:
        assert a.sql(SQL).to_pylist() == b.sql(SQL).to_pylist()


def test_info_shows_offsets_and_error(skewed):
    proc = subprocess.run([bin_path("paradise"), "info", "--json", str(skewed)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    clock = json.loads(proc.stdout)["clock"]
    assert clock["offsets"]["1"] == ENTRY and clock["residual_ns"] == 7_000


@pytest.mark.parametrize("bad", [{"1": "3 ms"}, {"1": {"start_ns": "3"}}, {"1": {"start_ns": 1e300}}, ["1"]])
def test_damaged_offsets_are_refused_in_one_line(tmp_path, bad):
    _write(tmp_path, 1, {"method": "ping_min_rtt", "residual_ns": 0, "offsets": bad})
    with pytest.raises(NotAParadiseTrace, match="clock.offsets"):
        open_trace(tmp_path)
    proc = subprocess.run([bin_path("paradise"), "info", str(tmp_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "clock.offsets" in proc.stderr
