"""The GPU analyses (gpu_kernels, gpu_idle, gpu_queue, gpu_launches, annotations) on a real
Kineto trace, against figures computed here from the raw JSON with plain Python."""

from __future__ import annotations

import collections
import importlib

import pytest
from accounting import union_length
from kineto_raw import HTA, NCCL, WORK, _intervals, _ns, _raw

from paradise.analyses import gpu_launches
from paradise.analyses.base import AnalysisConfig
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.importers.kineto import import_trace
from paradise.store import open_trace


@pytest.fixture(scope="module")
def results(real_data, tmp_path_factory):
    trace = open_trace(import_trace(real_data.joinpath(*HTA, NCCL), tmp_path_factory.mktemp("g") / "n.parquet"))
    with DuckDBEngine(trace) as eng:
        mods = {n: importlib.import_module(f"paradise.analyses.{n}")
                for n in ("gpu_kernels", "gpu_idle", "gpu_queue", "gpu_launches", "annotations")}  # fmt: skip
        session = Session(eng, trace)
        return {n: m.analyze(session, AnalysisConfig()).to_dict() for n, m in mods.items() if m.applies(session)}


@pytest.fixture(scope="module")
def raw(real_data):
    xs = [e for e in _raw(real_data, NCCL) if e.get("ph") == "X"]
    dev = [e for e in xs if e.get("cat") in WORK]
    host = {e["args"]["correlation"]: e for e in xs if e.get("cat") not in WORK and "correlation" in e.get("args", {})
            and e.get("cat") not in ("gpu_user_annotation", "cuda_sync")}  # fmt: skip
    return xs, dev, host


def _type(e):
    n = e["name"].lower()
    return "communication" if "nccl" in n else "memory" if e["cat"] != "kernel" or "memcpy" in n or "memset" in n \
        else "computation"


def test_kernel_types_follow_the_raw_unions(results, raw):
    _, dev, _ = raw
    by = {t: _intervals(dev, lambda e, t=t: _type(e) == t) for t in ("computation", "communication", "memory")}
    everything = _intervals(dev, lambda e: True)
    r = results["gpu_kernels"]["ranks"][0]
    span = max(b for _, b in everything) - min(a for a, _ in everything)
    assert r["span_ns"] == span
    assert r["idle_ns"] == span - union_length(everything)
    assert r["computation_ns"] == union_length(by["computation"])
    assert r["communication_ns"] == union_length(by["communication"])
    # overlap of communication with computation: |comp| + |comm| - |comp ∪ comm|
    both = union_length(by["computation"]) + union_length(by["communication"]) - union_length(by["computation"] + by["communication"])
    assert r["comm_comp_overlap_ns"] == both


def test_idle_gaps_per_stream_sum_to_the_raw_gaps(results, raw):
    _, dev, _ = raw
    per = collections.defaultdict(list)
    for e in dev:
        per[e["args"]["stream"]].append((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])))
    assert {s["stream"] for s in results["gpu_idle"]["streams"]} == set(per)  # every stream, each checked
    for s in results["gpu_idle"]["streams"]:
        iv = sorted(per[s["stream"]])
        assert s["idle_ns"] == sum(max(b[0] - a[1], 0) for a, b in zip(iv, iv[1:]))


def test_queue_length_from_launches_and_ends(results, raw):
    _, dev, host = raw
    edges = collections.defaultdict(list)
    for e in dev:
        h = host.get(e["args"].get("correlation"))
        if h is not None:
            edges[e["args"]["stream"]] += [(_ns(h["ts"]), 1), (_ns(e["ts"]) + _ns(e["dur"]), -1)]
    assert {s["stream"] for s in results["gpu_queue"]["streams"]} == set(edges)  # every stream, each checked
    for s in results["gpu_queue"]["streams"]:
        q, lengths = 0, []
        for _, d in sorted(edges[s["stream"]]):
            q += d
            lengths.append(q)
        assert s["count"] == len(lengths) and s["max"] == max(lengths)
        assert s["mean"] == pytest.approx(sum(lengths) / len(lengths), abs=1e-4)


def test_launch_statistics(results, raw):
    _, dev, host = raw
    pairs = [(host[e["args"]["correlation"]], e) for e in dev if e["args"].get("correlation") in host]
    r = results["gpu_launches"]["ranks"][0]
    assert r["launches"] == len(pairs) == 3774
    assert r["cpu_ns"] == sum(_ns(h["dur"]) for h, _ in pairs)
    assert r["delay_ns"] == sum(max(_ns(k["ts"]) - _ns(h["ts"]) - _ns(h["dur"]), 0) for h, k in pairs)
    assert r["late"] == sum(_ns(k["ts"]) - _ns(h["ts"]) - _ns(h["dur"]) > gpu_launches.DELAY_CUTOFF_NS for h, k in pairs)


def test_gpu_annotations_count_the_rows_inside(results, raw):
    xs, dev, _ = raw
    spans = [e for e in xs if e.get("cat") == "gpu_user_annotation" and e["name"] == "nccl:broadcast"]
    inside = sum(1 for s in spans for e in dev
                 if _ns(e["ts"]) >= _ns(s["ts"]) and _ns(e["ts"]) + _ns(e["dur"]) <= _ns(s["ts"]) + _ns(s["dur"]))
    row = next(r for r in results["annotations"]["gpu"] if r["name"] == "nccl:broadcast")
    assert row["spans"] == len(spans) == 6 and row["kernels"] == inside


def test_per_step_types_follow_the_launching_step(results, raw):
    xs, dev, host = raw
    windows = sorted((_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"]), int(e["name"].split("#")[1]))
                     for e in xs if e["name"].startswith("ProfilerStep#"))  # fmt: skip

    def step_of(e):
        h = host.get(e["args"].get("correlation"))
        return None if h is None else next((n for a, b, n in windows if a <= _ns(h["ts"]) < b), None)

    assert results["gpu_kernels"]["steps"] and windows  # steps to check
    for row in results["gpu_kernels"]["steps"]:
        comp = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in dev
                if _type(e) == "computation" and step_of(e) == row["step"]]
        comm = [(_ns(e["ts"]), _ns(e["ts"]) + _ns(e["dur"])) for e in dev
                if _type(e) == "communication" and step_of(e) == row["step"]]
        # computation alone + computation with others = |comp|; overlap of the two = |comp|+|comm|-|union|
        with_comp = sum(v for k, v in row.items() if k.endswith("_ns") and "computation" in k)
        assert with_comp == union_length(comp)
        assert row["computation+communication_ns"] == union_length(comp) + union_length(comm) - union_length(comp + comm)
