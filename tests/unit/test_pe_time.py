"""The one accounting of PE time (overview_pe_time) on every kind of trace: per PE busy + idle +
other = span, none negative, each equal to the oracle computed from the raw rows (tests/accounting.py),
and what `paradise analyze` prints is that same accounting. Synthetic traces of every pattern and
kind, the golden cases, and the real third-party traces in ../shared/data/real."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pyarrow.parquet as pq
import pytest
from accounting import check_accounting as check
from builders import TraceBuilder, charm_like

from paradise.engines import busy
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
from paradise.synth import charm as synth_charm
from paradise.synth import synth
from tests.golden import cases


@pytest.mark.parametrize("pattern", synth_charm.PATTERNS)
def test_synth_charm_every_pattern(tmp_path, pattern):
    synth(tmp_path / "t", kind="charm", events=3000, pes=3, pattern=pattern, jobs=1)
    want = check(tmp_path / "t")
    assert all(w["running"] for w in want.values())


def test_synth_torch(tmp_path):
    synth(tmp_path / "t", kind="torch", events=3000, pes=2, jobs=1)
    check(tmp_path / "t")


@pytest.mark.parametrize("case", [c for c in cases.CASES if "@" not in c])
def test_golden_and_real_traces(tmp_path, case, request):
    real = request.getfixturevalue("real_data") if cases.needs_real_data(case) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = cases.make(case, tmp_path, real)
    check(path)


def _in_order(path) -> bool:
    """Whether the sweep takes the rows of the trace as written (in the format's order)."""
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        try:
            busy._swept(eng, "intervals")
        except busy.Unordered:
            return False
    return True


def _shuffle_rows(path) -> None:
    """Rewrites every file of the trace with its rows in a random order (metadata kept): a trace
    that breaks the format's row order, as a foreign writer might."""
    for i, f in enumerate(sorted(path.glob("*.parquet"))):
        t = pq.read_table(f)
        pq.write_table(t.take(np.random.default_rng(i).permutation(t.num_rows)), f)


def test_rows_out_of_order_are_swept_sorted(tmp_path):
    path = tmp_path / "t"
    synth(path, kind="charm", events=3000, pes=3, jobs=1)
    assert _in_order(path)  # in the format's order: swept as read
    want = check(path)
    _shuffle_rows(path)
    assert not _in_order(path)  # the sweep sees the broken order ...
    assert check(path) == want  # ... and sweeps the sorted rows instead


def test_part_files_of_a_crashed_run(tmp_path):
    # A PE left as several part files: each PE's rows span files; every sweep gives the oracle's numbers.
    b = charm_like(pes=3, steps=4, seed=1)
    check(b.write(tmp_path / "t", parts_per_pe=3, complete=False))


def test_pieces_read_from_the_footers(tmp_path):
    b = TraceBuilder(1)
    b.exec(0, 0, 100, "main", active=30)
    b.add(0, "piece", 0, 10, name="main", exec_t0=0)
    b.add(0, "piece", 80, 100, name="main", exec_t0=0)
    with_pieces = open_trace(b.write(tmp_path / "p"))
    b = TraceBuilder(1)
    b.exec(0, 0, 100, "main")
    without = open_trace(b.write(tmp_path / "n"))
    assert with_pieces.may_hold_pieces and not without.may_hold_pieces
    check(tmp_path / "p")
    check(tmp_path / "n")


def _round(x: float) -> int:
    """SQL's round: halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def test_clock_corrected_rows_keep_their_order(tmp_path):
    # Per-file clock corrections (a multi-rank torch run) are applied without a join, so the rows
    # stay in the files' order and the sweep takes them as read; each time moves by its file's
    # offset and drift, as computed here from the raw rows.
    path = tmp_path / "t"
    synth(path, kind="torch", events=3000, pes=3, jobs=1)
    trace = open_trace(path)
    corr = {str(f): (1_000 * i, 7_000 * i, 1e-4 * i) for i, f in enumerate(trace.files) if i}
    moved = dataclasses.replace(trace, corrections=corr)
    with DuckDBEngine(moved) as eng:
        busy._swept(eng, "intervals")  # raises Unordered if the rows came out of order
        got = eng.sql("SELECT t0 FROM events").column("t0").to_pylist()
    want = []
    for f in trace.files:
        ts, a, d = corr.get(str(f), (0, 0, 0.0))
        want += [t + a + _round(d * (t - ts)) for t in pq.read_table(f, columns=["t0"]).column("t0").to_pylist()]
    assert got == want


def test_sweep_batches_cut_anywhere_match_the_oracle():
    # Rows of several PEs in (pe, t0) order, cut into batches at random points (a batch holds one
    # PE, several, or a PE's middle); running and idle rows mixed, or all running (flags None):
    # every PE's busy and busy ∪ idle are the unions the oracle computes from the same rows.
    from accounting import union_length

    rng = np.random.default_rng(26)
    for trial in range(400):
        n = int(rng.integers(1, 80))
        pe = rng.integers(0, 4, n).astype(np.int32)
        t0 = rng.integers(0, 200, n).astype(np.int64)
        order = np.lexsort((t0, pe))
        pe, t0 = pe[order], t0[order]
        t1 = t0 + rng.integers(0, 40, n)
        running = rng.random(n) < (1.0 if trial % 3 == 0 else 0.7)
        cuts = sorted({0, n, *rng.integers(0, n, int(rng.integers(0, 5))).tolist()})
        sweep = busy._Sweep()
        for s, e in zip(cuts[:-1], cuts[1:]):
            flags = None if trial % 3 == 0 and trial % 2 == 0 else running[s:e]
            sweep.batch(pe[s:e], t0[s:e], t1[s:e], flags)
        for p in np.unique(pe):
            mine = pe == p
            runs = list(zip(t0[mine & running].tolist(), t1[mine & running].tolist()))
            every = list(zip(t0[mine].tolist(), t1[mine].tolist()))
            want = [union_length(runs), union_length(every), int((mine & running).sum()), int((mine & ~running).sum())]
            assert sweep.totals[int(p)] == want, (trial, int(p))


def test_sweep_refuses_rows_out_of_order():
    sweep = busy._Sweep()
    sweep.batch(np.array([0, 0], np.int32), np.array([5, 9], np.int64), np.array([6, 10], np.int64), None)
    with pytest.raises(busy.Unordered):  # across batches: an earlier start on the same PE
        sweep.batch(np.array([0], np.int32), np.array([8], np.int64), np.array([9], np.int64), None)
    with pytest.raises(busy.Unordered):  # within a one-PE batch
        busy._Sweep().batch(np.array([1, 1], np.int32), np.array([5, 4], np.int64), np.array([6, 6], np.int64), None)
    with pytest.raises(busy.Unordered):  # a PE number going down
        busy._Sweep().batch(np.array([2, 1], np.int32), np.array([1, 2], np.int64), np.array([3, 4], np.int64), None)
