"""TraceWriter crash safety: a SIGKILLed writer leaves every flushed row readable; a clean close compacts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.format import read_metadata
from paradise.store import open_trace
from tests.trace_writer import TraceWriter

FLUSH_ROWS = 50

# The child appends rows forever-ish; after every flush it reports the rows flushed so far by
# atomically replacing a small file. With PAUSE_AT set it buffers a few unflushed rows, reports
# "paused" and sleeps, so the parent kills it at a known point.
CHILD = textwrap.dedent(
    """
    import os, sys, time
    from tests.trace_writer import TraceWriter

    out, report, pause_at = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def say(text):
        with open(report + ".tmp", "w") as fh:
            fh.write(text)
        os.replace(report + ".tmp", report)

    w = TraceWriter(out, 0, flush_rows=50, source="synthetic", program="crash", pes=1)
    flushed, i = 0, 0
    while True:
        w.append_dict(kind="exec", pe=0, t0=i * 10, t1=i * 10 + 5, name="work", step=i // 100)
        i += 1
        if w.rows_written != flushed:
            flushed = w.rows_written
            say(str(flushed))
        if pause_at and flushed >= pause_at and i == flushed + 17:  # 17 rows buffered, never flushed
            say(f"{flushed} paused")
            time.sleep(600)
    """
)


def _spawn(tmp_path: Path, pause_at: int) -> tuple[subprocess.Popen, Path, Path]:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    out, report = tmp_path / "trace", tmp_path / "flushed.txt"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen([sys.executable, str(script), str(out), str(report), str(pause_at)], env=env)
    return proc, out, report


def _wait_for(report: Path, pred, proc: subprocess.Popen, timeout_s: float = 120) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if report.exists():
            text = report.read_text()
            if text and pred(text):
                return text
        if proc.poll() is not None:
            pytest.fail(f"writer child exited early with {proc.returncode}")
        time.sleep(0.02)
    proc.kill()
    pytest.fail("writer child did not report in time")


def _count(trace_dir: Path) -> int:
    with DuckDBEngine(open_trace(trace_dir)) as eng:
        return eng.sql("SELECT count(*) AS n FROM events").column("n")[0].as_py()


@pytest.mark.timeout(180)
def test_sigkill_at_known_point_keeps_exactly_the_flushed_rows(tmp_path):
    proc, out, report = _spawn(tmp_path, pause_at=500)
    text = _wait_for(report, lambda t: t.endswith("paused"), proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    flushed = int(text.split()[0])
    assert flushed == 500  # 10 flushes of 50 rows; the 17 buffered rows die with the process
    trace = open_trace(out)
    assert not trace.complete
    assert not (out / "pe-00000.parquet").exists()
    assert len(trace.files) == flushed // FLUSH_ROWS
    assert _count(out) == flushed
    with DuckDBEngine(trace) as eng:  # the rows are the first `flushed` ones, in order, none twice
        row = eng.sql("SELECT min(t0) AS a, max(t0) AS b, count(DISTINCT t0) AS d FROM events").to_pylist()[0]
    assert row == {"a": 0, "b": (flushed - 1) * 10, "d": flushed}


@pytest.mark.timeout(180)
def test_sigkill_while_writing_loses_nothing_flushed(tmp_path):
    proc, out, report = _spawn(tmp_path, pause_at=0)
    _wait_for(report, lambda t: int(t) >= 300, proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    reported = int(report.read_text())
    n = _count(out)
    # A part may be renamed into place just before its report is written, never the reverse.
    assert n in (reported, reported + FLUSH_ROWS)
    assert n % FLUSH_ROWS == 0
    assert not open_trace(out).complete
    for f in out.glob("*.parquet"):  # every file left behind is complete, readable Parquet
        assert pq.ParquetFile(f).metadata.num_rows == FLUSH_ROWS


def test_clean_close_compacts_to_one_complete_file(tmp_path):
    w = TraceWriter(tmp_path, 3, flush_rows=FLUSH_ROWS, source="synthetic", program="ok", pes=4)
    for i in range(120):  # 2 full flushes + 20 rows flushed by close
        w.append(("exec", 3, i, i + 1))
    final = w.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pe-00003.parquet"]
    meta = read_metadata(pq.read_schema(final).metadata)
    assert meta["complete"] is True and meta["pe"] == 3 and meta["program"] == "ok"
    trace = open_trace(tmp_path)
    assert trace.complete and trace.num_rows == 120
    assert _count(tmp_path) == 120


def test_crash_leaves_complete_false(tmp_path):
    with pytest.raises(RuntimeError):
        with TraceWriter(tmp_path, 0, flush_rows=FLUSH_ROWS, source="synthetic", program="boom", pes=1) as w:
            for i in range(70):
                w.append(("exec", 0, i, i + 1))
            raise RuntimeError("the traced program failed")
    meta = read_metadata(pq.read_schema(tmp_path / "pe-00000.parquet").metadata)
    assert meta["complete"] is False
    trace = open_trace(tmp_path)
    assert not trace.complete and trace.num_rows == 70


def test_parts_beside_a_final_file_are_ignored(tmp_path):
    """A crash during compaction (after the rename, before the parts are removed) counts rows once."""
    w = TraceWriter(tmp_path, 1, flush_rows=FLUSH_ROWS, source="synthetic", program="c", pes=2)
    for i in range(100):
        w.append(("exec", 1, i, i + 1))
    parts = list(w._parts)
    final = w.close()
    for p in parts:  # put the parts back as if unlink never happened
        pq.write_table(pq.read_table(final).slice(0, FLUSH_ROWS), p)
    trace = open_trace(tmp_path)
    assert [f.name for f in trace.files] == ["pe-00001.parquet"]
    assert _count(tmp_path) == 100
