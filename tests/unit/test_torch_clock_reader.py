"""tracers.torch.clock.reader: the hooks' frame-free clock reads give the tracer's own trace time,
with the plain clock, with an injected skew, and for a tracer subclass with its own clock."""

from __future__ import annotations

import time

import pytest

from tracers.clock import ENV_FAKE_SKEW
from tracers.torch import clock
from tracers.torch.tracer import Tracer

OFFSET_NS = 7_000_000_000  # 7 s: far beyond the few us between two reads
DRIFT_PPM = 50.0


def _bracketed(tr: Tracer) -> tuple[int, int, int]:
    """(tr.now(), the reader's time, tr.now()) read in that order."""
    read, base = clock.reader(tr)
    before = tr.now()
    t = read() - base
    after = tr.now()
    return before, t, after


def test_plain_clock_reads_time_ns_without_a_frame(tmp_path) -> None:
    tr = Tracer(tmp_path, rank=0, world_size=1)
    try:
        read, base = clock.reader(tr)
        assert read is time.time_ns  # a C call: no Python frame per read
        before, t, after = _bracketed(tr)
        assert before <= t <= after
    finally:
        tr.close(complete=True)


def test_skewed_clock_reads_the_skewed_time(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ENV_FAKE_SKEW, f"0:{OFFSET_NS}:{DRIFT_PPM}")
    origin = time.time_ns()
    tr = Tracer(tmp_path, rank=0, world_size=1, origin_ns=origin)
    try:
        before, t, after = _bracketed(tr)
        assert before <= t <= after
        assert t >= OFFSET_NS  # the injected offset is in the reader's time (the plain clock starts near 0)
    finally:
        tr.close(complete=True)


def test_subclass_clock_is_used(tmp_path) -> None:
    class Frozen(Tracer):
        def now(self) -> int:
            return 42

    tr = Frozen(tmp_path, rank=0, world_size=1)
    try:
        read, base = clock.reader(tr)
        assert read() - base == 42
    finally:
        tr.close(complete=True)


@pytest.mark.parametrize("skew", [False, True])
def test_reader_agrees_with_to_trace(tmp_path, monkeypatch, skew: bool) -> None:
    """The reader's time of an instant equals to_trace of that instant's time.time_ns() to within
    the reads' spacing (to_trace is how record_event converts the program's own times)."""
    if skew:
        monkeypatch.setenv(ENV_FAKE_SKEW, f"0:{OFFSET_NS}:{DRIFT_PPM}")
    tr = Tracer(tmp_path, rank=0, world_size=1)
    try:
        read, base = clock.reader(tr)
        w0 = tr.to_trace(time.time_ns())
        t = read() - base
        w1 = tr.to_trace(time.time_ns())
        assert w0 <= t <= w1
    finally:
        tr.close(complete=True)
