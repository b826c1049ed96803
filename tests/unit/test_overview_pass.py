"""paradise.engines.overview_pass: overview_pe's groups from the one stream equal the SQL oracle
(tests/oracles/sql/overview_pe.sql) row for row, schema and order included, and its busy sweep
equals the sweep over the `intervals` view (busy.swept_totals), on traces of every shape: sends with
odd sizes and missing peers, collectives, instants, exec rows without an end, pieces, part files,
rows out of the format's order, clock corrections, batches cut anywhere."""

from __future__ import annotations

import dataclasses
import tempfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from builders import TraceBuilder, charm_like, torch_like
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradise.engines import busy, overview_pass
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
from paradise.synth import synth

ORACLE = (Path(__file__).resolve().parents[1] / "oracles" / "sql" / "overview_pe.sql").read_text()


def _check(path: Path, corrections: dict | None = None) -> tuple:
    """The pass against the oracle on one trace; returns (groups, pe_time)."""
    trace = open_trace(path)
    if corrections:
        trace = dataclasses.replace(trace, corrections=corrections)
    with DuckDBEngine(trace) as eng:
        groups, pe_time = overview_pass.overview(eng)
        want = eng.sql(ORACLE)
        assert groups.schema == want.schema
        assert groups.to_pylist() == want.to_pylist()
        assert pe_time == busy.table(busy.swept_totals(eng), want)
    return groups, pe_time


def _odd_sends(path: Path) -> Path:
    b = TraceBuilder(3)
    sizes = [None, 0, 1, 2, 3, 4095, 4096, 2**40 + 1, None]
    for i, nbytes in enumerate(sizes):
        b.add(i % 3, "send", 10 * i, None, peer_pe=None if i % 4 == 3 else (i + 1) % 3, bytes=nbytes,
              name="A.go", msg=i + 1)
    b.exec(1, 100, 110, "A.go", coll="A#0", cat="array", peer_pe=0, bytes=64)
    b.exec(2, 120, 130, "B.go", active=4)
    b.add(2, "exec", 140, None, name="B.go")  # an exec without an end and without active: dur null
    b.add(0, "mark", 200)
    b.idle(0, 210, 260)
    b.add(1, "idle", 300, None)  # an idle row without an end: no interval
    b.add(1, "phase", 310, None, name="forward")  # nor a phase without one
    b.exec(1, 320, 330, "A.go")
    return b.write(path)


@pytest.mark.parametrize("make", ["charm_like", "charm_parts", "torch_like", "odd_sends", "synth_charm",
                                  "synth_torch"])
def test_groups_equal_the_oracle(tmp_path, make):
    path = tmp_path / "t"
    if make == "charm_like":
        charm_like(pes=5, steps=3).write(path)
    elif make == "charm_parts":
        charm_like(pes=3, steps=4, seed=1).write(path, parts_per_pe=3, complete=False)
    elif make == "torch_like":
        torch_like(ranks=3, steps=2).write(path)
    elif make == "odd_sends":
        _odd_sends(path)
    else:
        synth(path, kind=make.split("_")[1], events=3000, pes=3, jobs=1)
    groups, _ = _check(path)
    assert groups.num_rows > 0


def test_pieces_are_swept_from_the_intervals_view(tmp_path):
    # An exec that ran in pieces is no interval (its pieces are): the pass leaves the sweep to the
    # `intervals` view, which drops it; busy = the pieces' 30 ns, not the exec's 100.
    b = TraceBuilder(1)
    b.exec(0, 0, 100, "main", active=30)
    b.add(0, "piece", 0, 10, name="main", exec_t0=0)
    b.add(0, "piece", 80, 100, name="main", exec_t0=0)
    _, pe_time = _check(b.write(tmp_path / "p"))
    assert pe_time.column("busy_ns").to_pylist() == [30]


def test_rows_out_of_order_are_swept_sorted(tmp_path):
    path = tmp_path / "t"
    synth(path, kind="charm", events=3000, pes=3, jobs=1)
    _, in_order = _check(path)
    for i, f in enumerate(sorted(path.glob("*.parquet"))):  # the rows of every file shuffled
        t = pq.read_table(f)
        pq.write_table(t.take(np.random.default_rng(i).permutation(t.num_rows)), f)
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        with pytest.raises(busy.Unordered):
            busy._swept(eng, "intervals")
    _, shuffled = _check(path)
    assert shuffled == in_order


def test_clock_corrections_come_from_the_events_view(tmp_path):
    path = tmp_path / "t"
    synth(path, kind="torch", events=3000, pes=3, jobs=1)
    files = open_trace(path).files
    corr = {str(f): (1_000 * i, 7_000 * i, 1e-4 * i) for i, f in enumerate(files) if i}
    plain, _ = _check(path)
    moved, _ = _check(path, corr)
    assert plain.column("t_first") != moved.column("t_first")


def test_batches_cut_anywhere(tmp_path, monkeypatch):
    # The stream in small batches: a batch holds one PE, several, or a PE's middle; the sums merge.
    path = charm_like(pes=4, steps=3).write(tmp_path / "t")
    whole, whole_time = _check(path)
    real = DuckDBEngine.batches
    monkeypatch.setattr(DuckDBEngine, "batches", lambda self, name, batch_rows=1 << 20, **p: real(
        self, name, batch_rows=7, **p))
    cut, cut_time = _check(path)
    assert cut == whole and cut_time == whole_time


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["exec", "send", "collective", "idle", "mark", "phase"]),
                          st.integers(0, 2), st.integers(-50, 1_000), st.integers(0, 300), st.integers(0, 3)),
                min_size=1, max_size=40))
def test_random_rows(events):
    b = TraceBuilder(3)
    for kind, pe, t0, dur, k in events:
        if kind == "exec":
            b.exec(pe, t0, t0 + dur, "xyz"[k % 3], peer_pe=k % 2, active=dur // 2 if k == 3 else None,
                   coll=None if k == 0 else "C#0", cat=None if k < 2 else "cpu_op")
        elif kind == "send":
            b.send(pe, t0, None if k == 3 else k, None if k == 2 else 8 ** k, name="xyz"[k % 3], coll="C#0")
        elif kind == "collective":
            b.collective(pe, "ar" if k % 2 else "bc", t0, t0 + dur, nbytes=64 * k)
        elif kind == "idle":
            b.idle(pe, t0, t0 + dur)
        elif kind == "phase":
            b.add(pe, "phase", t0, t0 + dur if k else None, name="forward")
        else:
            b.add(pe, "mark", t0)
    with tempfile.TemporaryDirectory() as d:
        _check(b.write(Path(d) / "t"))
