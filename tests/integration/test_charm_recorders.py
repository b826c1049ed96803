"""The charm tracer's two recorders: native (C extension) and pure Python (the fallback).

The same deterministic programs traced with each give the same rows (all but times and idle
gaps); and every test of test_charm_trace.py runs again here with the extension disabled
(PARADISE_NATIVE_RECORDER=0), so CI exercises the fallback.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from paradise.format import SCHEMA
from paradise.store import open_trace
from tests.integration.charm_helpers import PROGRAMS, require_ok, trace_charm
from tests.integration.test_charm_trace import *  # noqa: F403  the tracer tests, again (see python_recorder)

pytestmark = pytest.mark.timeout(300)
del test_packed_rows_round_trip  # noqa: F821  parametrized over both recorders there already

TIMES = {"t0", "t1", "active", "exec_t0"}
"""Columns that differ between any two runs."""


@pytest.fixture(scope="module", autouse=True)
def python_recorder():
    """This module's traced runs use the pure-Python recorder."""
    mp = pytest.MonkeyPatch()
    mp.setenv("PARADISE_NATIVE_RECORDER", "0")
    yield
    mp.undo()


def _rows(trace_dir: Path) -> list[tuple]:
    """Every row but idle ones, without times, as sorted tuples (order of writing differs)."""
    keep = [f.name for f in SCHEMA if f.name not in TIMES]
    out = []
    for f in sorted(trace_dir.glob("pe-*.parquet")):
        out += [tuple(r.values()) for r in pq.ParquetFile(f).read(columns=keep).to_pylist() if r["kind"] != "idle"]
    return sorted(out, key=repr)


def _traced(tmp_path: Path, monkeypatch, native: str, program: str, *args: str) -> tuple[list[tuple], str]:
    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", native)
    out = tmp_path / f"{program}-{native}"
    proc = trace_charm(out, PROGRAMS / f"{program}.py", *args, pes=1)
    require_ok(proc)
    assert "RESULT ok" in proc.stdout
    return _rows(out), open_trace(out).metadata["extra"]["recorder"]


@pytest.mark.parametrize(("program", "args", "kinds"), [("ring", ["3"], {"exec", "send", "create", "step"}),
                                                       ("threaded", [], {"exec", "send", "create", "piece"})])
def test_both_recorders_record_the_same_rows(tmp_path, monkeypatch, program, args, kinds):
    """ring: sends, broadcasts, group sends, steps; threaded: coroutine pieces and unfinished rows."""
    native, kind_n = _traced(tmp_path, monkeypatch, "1", program, *args)
    python, kind_p = _traced(tmp_path, monkeypatch, "0", program, *args)
    assert (kind_n, kind_p) == ("native", "python (PARADISE_NATIVE_RECORDER=0)")
    assert kinds <= {r[0] for r in native}
    assert len(native) == len(python)
    assert native == python

