"""Test oracle for the one accounting of PE time: each PE's span, busy, idle and other time
computed in plain Python from a trace's raw rows, from the format's definitions (docs/trace-format.md:
running intervals are exec rows without pieces, piece rows and phase rows), with the obvious
interval union. Independent of paradise/sql/overview_pe_time.sql, which it checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from paradise.analyses import overview
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace

PIECE_KEY = ("pe", "exec_t0", "name", "coll", "obj", "msg")
EXEC_KEY = ("pe", "t0", "name", "coll", "obj", "msg")


def union_length(intervals: list[tuple[int, int]]) -> int:
    """Length of a union of [t0, t1] intervals (empty or reversed ones count 0)."""
    total, end = 0, None
    for t0, t1 in sorted(intervals):
        if t1 <= t0:
            continue
        if end is None or t0 > end:
            total += t1 - t0
            end = t1
        elif t1 > end:
            total += t1 - end
            end = t1
    return total


def merged_intervals(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The disjoint intervals of a union, merged after a sort (the intersection of two unions is the
    overlap of their merged intervals)."""
    out: list[list[int]] = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def trace_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of a trace (file or directory) as dicts, through the store's file selection."""
    cols = ["kind", "pe", "t0", "t1", "active", "exec_t0", "name", "coll", "obj", "msg"]
    out: list[dict[str, Any]] = []
    for f in open_trace(path).files:
        t = pq.read_table(f)
        have = [c for c in cols if c in t.column_names]
        for r in t.select(have).to_pylist():
            r.setdefault("exec_t0", None)
            r.setdefault("active", None)
            out.append(r)
    return out


def pe_accounts(rows: list[dict[str, Any]]) -> dict[int, dict[str, int]]:
    """Per PE: span_ns, busy_ns, idle_ns, other_ns as the format defines them."""
    pieced = {tuple(r[k] for k in PIECE_KEY) for r in rows if r["kind"] == "piece"}
    by_pe: dict[int, dict[str, list]] = {}
    for r in rows:
        d = by_pe.setdefault(r["pe"], {"starts": [], "ends": [], "run": [], "idle": []})
        d["starts"].append(r["t0"])
        d["ends"].append(r["t1"] if r["t1"] is not None else r["t0"])
        if r["t1"] is None:
            continue
        if r["kind"] == "piece" or r["kind"] == "phase" or (
                r["kind"] == "exec" and tuple(r[k] for k in EXEC_KEY) not in pieced):
            d["run"].append((r["t0"], r["t1"]))
        elif r["kind"] == "idle":
            d["idle"].append((r["t0"], r["t1"]))
    out = {}
    for pe, d in by_pe.items():
        span = max(d["ends"]) - min(d["starts"])
        busy = union_length(d["run"])
        both = union_length(d["run"] + d["idle"])
        out[pe] = {"span_ns": span, "busy_ns": busy, "idle_ns": both - busy, "other_ns": span - both,
                   "running": len(d["run"])}
    return out


def check_accounting(path: Path) -> dict[int, dict[str, int]]:
    """Asserts the accounting of the trace at `path`; returns the oracle's numbers."""
    want = pe_accounts(trace_rows(path))
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        session = Session(eng, trace)
        got = {r["pe"]: r for r in session.get("pe_time").to_pylist()}
        printed = overview.analyze(session).to_dict()
    assert set(got) == set(want)
    known = any(w["running"] for w in want.values())
    assert printed["summary"]["busy_known"] == known
    for row in printed["per_pe"]:
        pe, w = row["pe"], want[row["pe"]]
        g = got[pe]
        assert min(g["busy_ns"], g["idle_ns"], g["other_ns"]) >= 0, (pe, g)
        assert g["busy_ns"] + g["idle_ns"] + g["other_ns"] == g["span_ns"], (pe, g)
        assert (g["span_ns"], g["busy_ns"], g["idle_ns"], g["other_ns"]) == (
            w["span_ns"], w["busy_ns"], w["idle_ns"], w["other_ns"]), (pe, g, w)
        assert row["idle_ns"] == w["idle_ns"] and row["span_ns"] == w["span_ns"]
        if known:
            assert (row["busy_ns"], row["other_ns"]) == (w["busy_ns"], w["other_ns"])
        else:  # nothing measures busy time: the overview says unknown, never 0
            assert row["busy_ns"] is None and row["other_ns"] is None
    return want
