"""Collectives counted as calls on every backend, and the slowest rank is the one that arrived last.

Two-rank gloo Kineto traces written by hand in the profiler's JSON shape: per rank, barriers as
c10d::barrier calls (main thread) each with its gloo:barrier annotation (gloo worker thread),
all-gathers as c10d::allgather_ calls without any annotation, one c10d::alltoall_base_ and one
c10d::allreduce_. Rank 1 starts every call later than rank 0 (it arrives last) and so spends
less time inside each one, waiting for nobody.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow.parquet as pq

from paradise.analyses import training
from paradise.analyses.base import AnalysisConfig
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.importers.kineto import import_trace
from paradise.store import open_trace

BARRIERS, ALLGATHERS = 6, 12
LATE_US = 300  # rank 1 calls every collective this much later than rank 0


def _rank_events(rank: int) -> list[dict]:
    ev, t = [], 1000.0
    late = LATE_US if rank == 1 else 0

    def call(name: str, inside_us: float, annotation: str | None = None) -> None:
        nonlocal t
        start = t + late
        end = t + LATE_US + inside_us  # every rank leaves when the last one has arrived
        ev.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": start, "dur": end - start,
                   "args": {}})
        if annotation:
            ev.append({"ph": "X", "cat": "user_annotation", "name": annotation, "pid": 1, "tid": 7,
                       "ts": start + 1, "dur": end - start - 2, "args": {}})
        t = end + 50

    for s in range(4):
        step_t0 = t
        for _ in range(BARRIERS // 4 + (s < BARRIERS % 4)):
            call("c10d::barrier", 20, "gloo:barrier")
        for _ in range(ALLGATHERS // 4):
            call("c10d::allgather_", 40)
        if s == 3:
            call("c10d::alltoall_base_", 60)
            call("c10d::allreduce_", 80)
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1,
                   "ts": step_t0, "dur": t - step_t0, "args": {}})
    return ev


def _trace(tmp_path):
    files = []
    for rank in (0, 1):
        f = tmp_path / f"rank-{rank}.json"
        f.write_text(json.dumps({"distributedInfo": {"rank": rank, "world_size": 2, "backend": "gloo"},
                                 "traceEvents": _rank_events(rank)}))
        files.append(f)
    return import_trace(files, tmp_path / "gloo.parquet")


def test_each_call_is_one_collective(tmp_path):
    raw = [e for r in (0, 1) for e in _rank_events(r)]
    calls = pd.Series([e["name"] for e in raw if e["name"].startswith("c10d::")]).value_counts()
    df = pq.read_table(_trace(tmp_path)).to_pandas()
    coll = df[df["kind"] == "collective"]
    # one collective per c10d:: call: the barrier's gloo:barrier annotation is its twin, and the
    # all-gathers, all-to-all and all-reduce, which have no annotation, count all the same
    assert len(coll) == int(calls.sum()) == 2 * (BARRIERS + ALLGATHERS + 2)
    assert (coll["name"] == "gloo:barrier").sum() == 2 * BARRIERS  # the annotation carries the barrier
    assert (coll["name"] == "c10d::allgather_").sum() == 2 * ALLGATHERS
    assert (coll["name"] == "c10d::alltoall_base_").sum() == 2 and (coll["name"] == "c10d::allreduce_").sum() == 2
    assert not ((coll["name"] == "c10d::barrier").any())  # the barrier's call row is its twin
    assert (df["name"] == "c10d::barrier").sum() == 2 * BARRIERS


def test_slowest_rank_is_the_one_that_arrived_last(tmp_path):
    trace = open_trace(_trace(tmp_path))
    with DuckDBEngine(trace) as eng:
        r = training.analyze(Session(eng, trace), AnalysisConfig())
    rows = {a["name"]: a for a in r.sections["collective_arrivals"]}
    ag = rows["c10d::allgather_"]
    assert ag["slowest_rank"] == 1 and ag["last_calls"] == ag["met_calls"] == ALLGATHERS
    assert ag["wait_ns"] == ALLGATHERS * LATE_US * 1000
    # rank 0 spends more time inside every call (it waits for rank 1): the rank with the most time
    # inside is not the slowest
    coll = pq.read_table(trace.path).to_pandas().query("kind == 'collective' and name == 'c10d::allgather_'")
    inside = (coll["t1"] - coll["t0"]).groupby(coll["pe"]).sum()
    assert inside[0] > inside[1]
    # one all-to-all call: too few calls for a verdict, withheld with the reason
    a2a = rows["c10d::alltoall_base_"]
    assert a2a["slowest_rank"] is None and "at least 3" in a2a["withheld"]
    c = next(c for c in r.characteristics if c.name == "collective_slowest_rank")
    assert "rank 1 at 12 of 12 c10d::allgather_" in c.summary


def test_slowest_rank_withheld_on_one_rank(tmp_path):
    f = tmp_path / "rank-0.json"
    f.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": _rank_events(0)}))
    trace = open_trace(import_trace([f], tmp_path / "one.parquet"))
    with DuckDBEngine(trace) as eng:
        r = training.analyze(Session(eng, trace), AnalysisConfig())
    c = next(c for c in r.characteristics if c.name == "collective_slowest_rank")
    assert c.value is None and "unknown" in c.summary and "two or more ranks" in c.summary
    assert r.sections["collective_arrivals"] == []


def test_arrivals_on_dask_match(tmp_path):
    from paradise.engines import get_engine

    trace = open_trace(_trace(tmp_path))
    with get_engine(trace, "dask") as dask, DuckDBEngine(trace) as duck:
        want = duck.query("training_collective_arrivals").to_pylist()
        assert want and dask.query("training_collective_arrivals").to_pylist() == want
