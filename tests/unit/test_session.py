"""The run's Session: shared results built once across analysis threads, failures kept for every
caller, and results that do not depend on which analyses ran or in which order."""

from __future__ import annotations

import importlib
import threading
import time

import pytest
from builders import charm_like

from paradise.analyses import ANALYSES, placement
from paradise.analyses import session as session_mod
from paradise.analyses.base import AnalysisConfig
from paradise.analyses.runner import needs, run_analyses
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace


def test_each_result_is_built_once_and_waiters_get_it(monkeypatch):
    calls = []

    def make(s):
        calls.append(1)
        time.sleep(0.05)  # the other threads arrive while it is being built
        return object()

    monkeypatch.setitem(session_mod.SHARED, "k", make)
    s, got = Session(None, None), []
    threads = [threading.Thread(target=lambda: got.append(s.get("k"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 4 and all(g is got[0] for g in got)


def test_a_prefetch_failure_reaches_every_caller(monkeypatch):
    release = threading.Event()

    def boom(s):
        release.wait(5)
        raise RuntimeError("boom")

    monkeypatch.setitem(session_mod.SHARED, "k", boom)
    s = Session(None, None)
    s.prefetch(["k", "k"])  # claimed once: no second thread
    release.set()
    for _ in range(2):
        with pytest.raises(RuntimeError, match="boom"):
            s.get("k")
    s.settle()
    with pytest.raises(KeyError, match="no shared result named 'nope'"):
        s.get("nope")


def test_results_do_not_depend_on_what_ran_before(tmp_path):
    trace = open_trace(charm_like(pes=4, steps=3).write(tmp_path / "t"))
    with DuckDBEngine(trace) as eng:
        alone = placement.analyze(Session(eng, trace)).to_dict()
    with DuckDBEngine(trace) as eng:
        both, errors = run_analyses(Session(eng, trace), AnalysisConfig(), names=("overview", "placement"))
    assert not errors and both["placement"].to_dict() == alone


def test_two_at_a_time_equals_one_at_a_time(tmp_path, monkeypatch):
    trace = open_trace(charm_like(pes=4, steps=3).write(tmp_path / "t"))
    with DuckDBEngine(trace) as eng:
        assert eng.thread_safe
        both, errors = run_analyses(Session(eng, trace), AnalysisConfig())
    assert not errors
    with DuckDBEngine(trace) as eng:
        eng.thread_safe = False
        one, _ = run_analyses(Session(eng, trace), AnalysisConfig())
    assert list(both) == list(one)
    assert {n: r.to_dict() for n, r in both.items()} == {n: r.to_dict() for n, r in one.items()}


def test_needs_are_declared_by_the_analyses_that_apply(tmp_path):
    trace = open_trace(charm_like(pes=2, steps=1).write(tmp_path / "t"))
    with DuckDBEngine(trace) as eng:
        session = Session(eng, trace)
        assert needs(session, ("overview",)) == {"overview_groups", "pe_time"}
        assert {"exec_graph", "critical_path", "communication_edges"} <= needs(session, ("placement", "scheduling",
                                                                                           "communication"))
    for name in ANALYSES:  # every need names a shared result
        assert set(getattr(importlib.import_module(f"paradise.analyses.{name}"), "NEEDS", ())) <= set(
            session_mod.SHARED), name


def test_a_trace_large_for_its_memory_limit_runs_one_analysis_at_a_time(tmp_path, monkeypatch):
    from paradise.analyses import runner

    trace = open_trace(charm_like(pes=4, steps=3).write(tmp_path / "t"))
    threads: set[str] = set()
    real = placement.analyze

    def spy(session, config=None):
        threads.add(threading.current_thread().name)
        return real(session, config)

    monkeypatch.setattr(placement, "analyze", spy)
    budget = 1 << 30
    monkeypatch.setattr(runner, "CONCURRENT_BYTES_PER_ROW", budget // trace.num_rows)  # just fits
    with DuckDBEngine(trace, memory_limit=budget) as eng:
        assert runner.concurrent(Session(eng, trace))
    monkeypatch.setattr(runner, "CONCURRENT_BYTES_PER_ROW", budget // trace.num_rows + 1)  # too large
    with DuckDBEngine(trace, memory_limit=budget) as eng:
        s = Session(eng, trace)
        assert not runner.concurrent(s)
        results, errors = run_analyses(s, AnalysisConfig())
    assert not errors and "placement" in results
    assert threads == {"paradise-analysis_0"}  # the pool had one worker
