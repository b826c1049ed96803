"""Cross-rank critical path on a hand-made two-rank Kineto step whose arithmetic is known."""

from __future__ import annotations

import json

from paradise.analyses import step_critical_path
from paradise.analyses.base import AnalysisConfig
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.importers.kineto import import_trace
from paradise.store import open_trace


def _rank(rank: int, compute_us: int) -> dict:
    """One step of 2000 µs: at 10 µs launch a compute kernel (runs 100..100+compute), at 20 µs
    launch an all-reduce kernel; it starts when the compute kernel ends and ends at 1500 µs,
    when both ranks have joined (NCCL kernels end together)."""
    ev = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 2000},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 5, "dur": 10},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10, "dur": 3,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100, "dur": compute_us,
         "args": {"stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "cpu_op", "name": "c10d::allreduce_", "pid": 1, "tid": 1, "ts": 18, "dur": 10},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 3,
         "args": {"correlation": 2}},
        {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7, "ts": 100 + compute_us,
         "dur": 1400 - compute_us, "args": {"stream": 7, "correlation": 2}},
    ]
    return {"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": ev}


def test_the_step_waits_for_the_late_rank(tmp_path):
    files = []
    for rank, compute in ((0, 200), (1, 900)):  # rank 1 computes 700 µs longer
        f = tmp_path / f"r{rank}.json"
        f.write_text(json.dumps(_rank(rank, compute)))
        files.append(f)
    trace = open_trace(import_trace(files, tmp_path / "t.parquet"))
    with DuckDBEngine(trace) as eng:
        res = step_critical_path.analyze(Session(eng, trace), AnalysisConfig()).to_dict()
    s = res["summary"]
    by = {r["what"]: r["dur_ns"] for r in s["by_kind"]}
    # rank 0's all-reduce started at 300 µs but rank 1's only at 1000 µs: 700 µs waiting for the peer
    assert by["wait_for_peer"] == 700_000
    # then rank 1's gemm (900 µs) and the launch delay before it (100 - 13 = 87 µs)
    assert {"pe": 1, "name": "gemm", "dur_ns": 900_000} in s["kernels"]
    assert by["launch_delay"] == 87_000
    assert res["characteristics"][0]["value"] == 1 and s["by_rank"][0]["pe"] == 1
