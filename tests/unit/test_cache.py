"""Shared stage-1 results across analysis threads, and the two-at-a-time analysis run."""

from __future__ import annotations

import threading
import time

import pytest
from builders import charm_like

from paradise.analyses.base import AnalysisConfig
from paradise.analyses.runner import run_analyses
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.events import cache, eventload
from paradise.store import open_trace
from tests.unit import charm_synth as cs


class _Key:
    """A weakly referenceable stand-in for an engine."""


def test_each_key_is_made_once_and_waiters_get_its_result():
    key, calls = _Key(), []

    def make():
        calls.append(1)
        time.sleep(0.05)  # the other threads arrive while it is being made
        return object()

    got = []
    threads = [threading.Thread(target=lambda: got.append(cache.cached(key, "k", make))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)


def test_prefetch_claims_the_key_and_its_failure_reaches_callers():
    key, release = _Key(), threading.Event()

    def boom():
        release.wait(5)
        raise RuntimeError("boom")

    cache.prefetch(key, "k", boom)
    cache.prefetch(key, "k", boom)  # already being made: no second thread
    release.set()
    for _ in range(2):  # every caller, not only the first, sees the failure; make is never called
        with pytest.raises(RuntimeError, match="boom"):
            cache.cached(key, "k", lambda: pytest.fail("made twice"))


def _comparable(results: dict) -> dict:
    return {name: r.to_dict() for name, r in results.items()}


@pytest.mark.parametrize("make", [lambda: charm_like(pes=4, steps=3)], ids=["charm_like"])
def test_two_at_a_time_equals_one_at_a_time(tmp_path, make, monkeypatch):
    trace = open_trace(make().write(tmp_path / "t"))
    with DuckDBEngine(trace) as eng:
        assert eng.thread_safe
        both, errors = run_analyses(eng, trace, AnalysisConfig())
    assert not errors
    monkeypatch.setattr(DuckDBEngine, "thread_safe", False, raising=False)
    with DuckDBEngine(trace) as eng:
        eng.thread_safe = False
        one, _ = run_analyses(eng, trace, AnalysisConfig())
    assert list(both) == list(one)
    assert _comparable(both) == _comparable(one)


class _TableOnly:
    """An engine without batches(): the arrays come from whole tables (as from Dask)."""

    def __init__(self, eng: DuckDBEngine) -> None:
        self.eng = eng

    def query(self, name: str, **params):
        return self.eng.query(name, **params)


def test_streamed_and_table_event_arrays_agree(tmp_path):
    prog, pl = cs.ping_filler(10, 20)
    trace = open_trace(prog.write(tmp_path / "t", pl))
    with DuckDBEngine(trace) as eng:
        streamed = eventload.load(eng)
        whole = eventload.load(_TableOnly(eng))
    assert streamed.names == whole.names and streamed.ended == whole.ended
    assert streamed.reduce_targets == whole.reduce_targets
    for part in ("execs", "sends"):
        a, b = getattr(streamed, part), getattr(whole, part)
        assert a.keys() == b.keys()
        for col in a:
            assert a[col].dtype == b[col].dtype and a[col].tolist() == b[col].tolist(), (part, col)
    assert streamed.x_send.tolist() == whole.x_send.tolist()


def test_settle_waits_for_prefetches():
    key, done = _Key(), []
    cache.prefetch(key, "slow", lambda: (time.sleep(0.1), done.append(1)))
    cache.prefetch(key, "bad", lambda: 1 / 0)
    cache.settle(key)
    assert done == [1]
