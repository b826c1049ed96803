"""Rules the charm tracer's two recorders share, in-process (no charmrun): the idle row's start
(one clock read shared with the end of an execution) and the time order of a run that never flushed."""

from __future__ import annotations

import time
import types

import numpy as np
import pyarrow.parquet as pq
import pytest

from tracers.charm import dispatch
from tracers.charm._state import ST, clock
from tracers.charm.identity import NO_OBJECT
from tracers.charm.rowbuf import LAYOUT, NULL, Strings, make_recorder

KIND, T0, T1, MSG = (LAYOUT.index(f) for f in ("kind", "t0", "t1", "msg"))
K_IDLE = 2


def _recorder(monkeypatch, native: str):
    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", native)
    rec, kind = make_recorder()
    assert kind.startswith("native" if native == "1" else "python")
    return rec


def _rows(rec) -> np.ndarray:
    return np.frombuffer(rec.take(), dtype="<i8").reshape(-1, len(LAYOUT))


@pytest.mark.parametrize("native", ["1", "0"])
def test_idle_starts_at_the_return_to_the_scheduler(monkeypatch, native):
    """A callback whose last record is an execution's end returns at that end (the shared clock read);
    one that recorded something after it, or nothing at all, returns at its own later time."""
    rec = _recorder(monkeypatch, native)
    monkeypatch.setattr(ST, "rec", rec)
    monkeypatch.setattr(ST, "orig", {})
    monkeypatch.setattr(ST, "dispatch_state", [0, 0])
    marks: dict[str, int] = {}

    def run_exec(tag: str, then_send: bool) -> None:
        t0 = clock()
        t1 = marks[tag] = clock()
        rec.exec(t0, t1, t1 - t0, NULL, 0, NO_OBJECT)
        if then_send:
            time.sleep(0.002)
            marks[tag + "-send"] = t = clock()
            rec.send(t, 7, 0, 0, NULL, NULL, 64, NULL, NO_OBJECT)

    def quiet(tag: str) -> None:
        time.sleep(0.002)
        marks[tag] = clock()

    calls = iter([lambda: run_exec("a", False), lambda: run_exec("b", True), lambda: quiet("c"), lambda: None])
    charm = types.SimpleNamespace(**{name: (lambda *args: next(calls)()) for name in
                                     ("recvArrayMsg", "recvGroupMsg", "recvChareMsg", "recvArrayBcast",
                                      "buildMainchare")})
    dispatch.install_dispatch_hooks(charm)
    for _ in range(4):
        charm.recvGroupMsg(0, 0, 0, b"")
        time.sleep(0.002)  # > IDLE_MIN_NS between callbacks: an idle row each time
    rows = _rows(rec)
    idle = rows[rows[:, KIND] == K_IDLE]
    assert len(idle) == 3
    assert idle[0, T0] == marks["a"]  # the exec's end, exactly
    assert idle[1, T0] >= marks["b-send"] > marks["b"]
    assert idle[2, T0] >= marks["c"]
    assert (idle[:, T1] > idle[:, T0]).all()


@pytest.mark.parametrize("native", ["1", "0"])
def test_unflushed_rows_written_in_time_order(tmp_path, monkeypatch, native):
    """A run that never flushed is written straight into its file, sorted by t0 with equal starts in
    the order they were recorded (as paradise.format.order sorts); no part file is left."""
    from paradise.format.compact import convert
    from tracers.charm.parts import PackedWriter

    rec = _recorder(monkeypatch, native)
    strings = Strings()
    for k in ("exec", "send"):
        strings.code(k)
    w = PackedWriter(tmp_path, 0, strings, rec, source="charm4py", program="t", pes=1)
    starts = [30, 10, 20, 10, 5]
    for msg, t0 in enumerate(starts):
        rec.row(0, 0, t0, t0 + 1, 1, NULL, NULL, NULL, NULL, NULL, msg, NULL, NULL, NULL, NULL, NULL, NULL)
    final, _ = convert(w.close())
    got = pq.ParquetFile(final).read(columns=["t0", "msg"]).to_pylist()
    want = sorted(({"t0": t, "msg": m} for m, t in enumerate(starts)), key=lambda r: r["t0"])  # sorted() is stable
    assert got == want
    assert [p.name for p in tmp_path.iterdir()] == [final.name]



def test_native_buffer_pages_mapped_ahead_of_the_rows():
    """The native recorder's prefault thread maps a fresh buffer's pages before the rows reach them:
    the program's thread writes 10 000 rows (1.4 MB, ~350 pages) with almost no page faults of its own
    (without the thread: one fault every 28 rows)."""
    import platform
    import resource
    import sys

    native = pytest.importorskip("tracers.charm._recorder")
    if not sys.platform.startswith("linux"):
        pytest.skip("MADV_POPULATE_WRITE is Linux's")
    native.use_null(NULL)
    rec = native.Recorder(200_000, 150_000)
    fields = (0, 0, 1, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
    rec.row(*fields)  # the first row asks for the first stretch
    time.sleep(0.5)  # far more than the thread needs to map it (~1-5 ms)
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt
    for _ in range(10_000):
        rec.row(*fields)
    faults = resource.getrusage(resource.RUSAGE_THREAD).ru_minflt - before
    if faults > 300 and tuple(int(x) for x in platform.release().split("-")[0].split(".")[:2]) < (5, 14):
        pytest.skip("kernel without MADV_POPULATE_WRITE: pages fault on first write, as before")
    assert faults < 50, faults
    assert len(rec) == 10_001


def test_both_recorders_write_identical_spools(tmp_path, monkeypatch):
    """The same calls (exec, send to an array and to a PE, rare rows, idle) on the native and the
    pure-Python recorder give byte-identical spools, flush by flush."""
    pytest.importorskip("tracers.charm._recorder")
    from tracers.charm.parts import PackedWriter
    from tracers.charm.rowbuf import tails

    spools = []
    for native in ("1", "0"):
        rec = _recorder(monkeypatch, native)
        rec.pe, rec.origin = 1, 1000
        strings = Strings()
        k_exec, k_send, cat, coll, idx, name = (strings.code(t) for t in ("exec", "send", "array", "Cell#0", "[3]", "work"))
        ident = [None] * 9
        ident[7], ident[8] = tails(k_exec, k_send, cat, coll, 3, idx, 2)
        w = PackedWriter(tmp_path / native, 1, strings, rec, source="charm4py", program="t", pes=2)
        for i in range(3):
            rec.send(1100 + i, (1 << 40) + i, name, NULL, coll, 4, 64, NULL, ident)  # to an array element
            rec.send(1150 + i, (1 << 40) + 10 + i, name, 0, NULL, NULL, 8, strings.code(f'{{"i":{i}}}'), ident)
            rec.exec(1200 + i, 1300 + i, 90, i, name, ident)
            rec.idle(1300 + i, 1400 + i)
            w.flush()
        rec.row(k_exec, 1, 5, 6, 1, NULL, NULL, NULL, NULL, name, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
        spools.append(w.close().read_bytes())
    assert spools[0] == spools[1] and len(spools[0]) > 1000
