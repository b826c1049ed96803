"""CUDA graphs: a cudaGraphLaunch that runs many kernels is one launch, its kernels attributed
to it, one slot of the launch queue, and no advice to use CUDA graphs on a trace that does.

The Kineto JSON is written here by hand in the profiler's shape (torch.cuda.graphs traces: one
cuda_runtime `cudaGraphLaunch` row whose correlation every kernel of the graph carries)."""

from __future__ import annotations

import json

from paradise.analyses import gpu_launches, gpu_queue
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.importers.kineto import import_trace
from paradise.store import open_trace

GRAPHS, KERNELS_PER_GRAPH, STREAM = 6, 40, 7
SINGLES = 10  # plain cudaLaunchKernel launches, one kernel each


def _events() -> list[dict]:
    ev, corr, t = [], 100, 1000.0
    for _ in range(GRAPHS):
        corr += 1
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 1, "tid": 1, "ts": t,
                   "dur": 30.0, "args": {"correlation": corr}})
        k_t = t + 40
        for n in range(KERNELS_PER_GRAPH):  # many short kernels, each shorter than the launch call
            ev.append({"ph": "X", "cat": "kernel", "name": f"graph_kernel_{n % 5}", "pid": 0, "tid": STREAM,
                       "ts": k_t, "dur": 2.0, "args": {"correlation": corr, "stream": STREAM, "device": 0,
                                                       "graph node id": n}})
            k_t += 3
        t += 50  # the next graph is launched before this one finishes: graphs queue up
    for _ in range(SINGLES):
        corr += 1
        t += 400
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t,
                   "dur": 5.0, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": "single", "pid": 0, "tid": STREAM, "ts": t + 10,
                   "dur": 1.0, "args": {"correlation": corr, "stream": STREAM, "device": 0}})
    return ev


def _analyses(tmp_path):
    f = tmp_path / "graphs.json"
    events = _events()
    f.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": events}))
    trace = open_trace(import_trace([f], tmp_path / "graphs.parquet"))
    with DuckDBEngine(trace) as eng:
        s = Session(eng, trace)
        return events, gpu_launches.analyze(s), gpu_queue.analyze(s)


def _queue_lengths(events) -> list[int]:
    """Raw queue lengths: +1 at each launch call's start, -1 at the end of its last kernel."""
    host = {e["args"]["correlation"]: e for e in events if e["cat"] == "cuda_runtime"}
    last_end: dict[int, float] = {}
    for e in events:
        if e["cat"] == "kernel":
            c = e["args"]["correlation"]
            last_end[c] = max(last_end.get(c, 0.0), e["ts"] + e["dur"])
    edges = sorted([(round(host[c]["ts"] * 1000), 1) for c in last_end] + [(round(t * 1000), -1) for t in last_end.values()])
    q, out = 0, []
    for _, d in edges:
        q += d
        out.append(q)
    return out


def test_a_graph_launch_is_one_launch(tmp_path):
    events, launches, _ = _analyses(tmp_path)
    r = launches.sections["ranks"][0]
    assert r["launches"] == GRAPHS + SINGLES  # not GRAPHS * KERNELS_PER_GRAPH + SINGLES
    assert r["graph_launches"] == GRAPHS and r["kernels"] == GRAPHS * KERNELS_PER_GRAPH + SINGLES
    calls = [e["dur"] for e in events if e["cat"] == "cuda_runtime"]
    assert r["cpu_ns"] == round(sum(calls) * 1000)  # each launch call's time counted once
    assert r["cpu_mean_ns"] == round(sum(calls) * 1000 / len(calls), 1)
    # a graph's kernels are attributed to its launch: the graph launch's device time is theirs
    graph_row = next(x for x in launches.sections["by_delay"] if x["name"] == "cudaGraphLaunch")
    assert graph_row["launches"] == GRAPHS


def test_no_advice_to_use_cuda_graphs_when_the_trace_does(tmp_path):
    _, launches, _ = _analyses(tmp_path)
    c = next(c for c in launches.characteristics if c.name == "kernel_launches")
    # 10 of 16 launches ran shorter on the device than their call took: launch-bound
    assert c.value == "launch_bound"
    assert "already launches CUDA graphs (6 graph launch(es) running 240 kernels)" in c.summary
    assert "capture the step in a CUDA graph" not in c.summary


def test_queue_counts_one_slot_per_graph(tmp_path):
    events, _, queue = _analyses(tmp_path)
    want = _queue_lengths(events)
    s = next(x for x in queue.sections["streams"] if x["stream"] == STREAM)
    assert s["count"] == len(want) and s["max"] == max(want)
    assert s["max"] <= GRAPHS  # per kernel it would reach hundreds


def test_dask_engine_gives_the_same_launches_and_queue(tmp_path):
    from paradise.engines import get_engine

    f = tmp_path / "graphs.json"
    f.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": _events()}))
    trace = open_trace(import_trace([f], tmp_path / "graphs.parquet"))
    kw = {"runtime_cutoff_ns": gpu_launches.RUNTIME_CUTOFF_NS, "delay_cutoff_ns": gpu_launches.DELAY_CUTOFF_NS}
    with get_engine(trace, "dask") as dask, DuckDBEngine(trace) as duck:
        assert dask.query("gpu_launches", **kw).to_pylist() == duck.query("gpu_launches", **kw).to_pylist()
        assert dask.query("gpu_queue_length").to_pylist() == duck.query("gpu_queue_length").to_pylist()
