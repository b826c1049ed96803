"""The one accounting of PE time on real runs: charm4py programs under `charmrun +p2` whose `main`
and entry methods are coroutines (piece rows), and a `paradise trace torch` run without --profiler
(busy time from its phases). Per PE busy + idle + other = span, none negative, equal to the oracle
computed from the raw rows (tests/accounting.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from accounting import check_accounting, trace_rows

from tests import shared_runs
from tests.conftest import ROOT
from tests.integration.charm_helpers import require_ok, trace_charm


def _pieces(path: Path) -> tuple[list[dict], dict[tuple, list[dict]]]:
    """(exec rows, pieces by (pe, exec_t0, name)) of a trace."""
    rows = trace_rows(path)
    pieces: dict[tuple, list[dict]] = {}
    for r in rows:
        if r["kind"] == "piece":
            pieces.setdefault((r["pe"], r["exec_t0"], r["name"]), []).append(r)
    return [r for r in rows if r["kind"] == "exec"], pieces


def _assert_pieces_add_up(execs: list[dict], pieces: dict[tuple, list[dict]]) -> None:
    """An execution with pieces has `active` = their sum, and a PE's running intervals (pieces,
    executions without pieces) never overlap: nothing nested runs inside an interval written as
    running (a future delivery resuming a coroutine, main creating elements inline)."""
    running: dict[int, list[tuple[int, int, str]]] = {}
    for r in execs:
        ps = pieces.get((r["pe"], r["t0"], r["name"]))
        if ps:
            assert r["active"] == sum(p["t1"] - p["t0"] for p in ps), (r, ps)
        for p in ps or [r]:
            running.setdefault(r["pe"], []).append((p["t0"], p["t1"], r["name"]))
    for pe, ivs in running.items():
        ivs.sort()
        overlaps = [(a, b) for a, b in zip(ivs, ivs[1:]) if a[1] > b[0]]
        assert not overlaps, f"PE {pe}: {len(overlaps)} overlapping running intervals, e.g. {overlaps[:3]}"


def test_threaded_entry_methods_and_main_run_in_pieces(traced_run):
    out, proc = traced_run(*shared_runs.THREADED)  # shared with the consistency suite
    require_ok(proc)
    execs, pieces = _pieces(out)
    by_key = {(r["pe"], r["t0"], r["name"]): r for r in execs}
    talks = [r for r in execs if r["name"] == "talk"]
    assert len(talks) == 4  # one execution per element, one delivery each
    for key, ps in pieces.items():
        ex = by_key[key]  # every piece belongs to an execution
        ps.sort(key=lambda p: p["t0"])
        assert ps[0]["t0"] == ex["t0"] and ps[-1]["t1"] == ex["t1"]  # first start to last end
        assert all(a["t1"] <= b["t0"] for a, b in zip(ps, ps[1:]))  # pieces never overlap
        assert all(p["msg"] == ex["msg"] for p in ps)
    for t in talks:  # talk suspends once per round (3) and ends: 4 pieces, active = their sum
        ps = pieces[(t["pe"], t["t0"], "talk")]
        assert len(ps) == 4
    mains = [r for r in execs if r["name"] == "main"]
    assert len(mains) == 1 and (mains[0]["pe"], mains[0]["t0"], "main") in pieces
    assert not [k for k in pieces if k[2] == "note"]  # plain entry methods have no pieces
    # a future's delivery resumes the waiting coroutine inside it: that execution runs in pieces too
    assert [k for k in pieces if k[2] == "_future_deposit_result"]
    _assert_pieces_add_up(execs, pieces)
    acct = check_accounting(out)
    assert acct[0]["busy_ns"] < acct[0]["span_ns"]


def test_stencil2d_pe0_busy_below_its_span(tmp_path):
    out = tmp_path / "t"
    require_ok(trace_charm(out, ROOT / "examples" / "stencil2d.py", "--grid", "4", "4", "--block", "64",
                           "--iters", "10"))
    acct = check_accounting(out)
    execs, pieces = _pieces(out)
    main = next(r for r in execs if r["name"] == "main")
    assert (main["pe"], main["t0"], "main") in pieces
    _assert_pieces_add_up(execs, pieces)
    # main's [t0, t1] covers most of PE 0's span; its pieces do not: PE 0 is not busy all along
    assert main["t1"] - main["t0"] > 0.5 * acct[0]["span_ns"]
    assert acct[0]["busy_ns"] < 0.99 * acct[0]["span_ns"]


def test_torch_run_without_profiler_has_busy_time(traced_run, analyzed_json):
    pytest.importorskip("torch")
    out, proc = traced_run(*shared_runs.DDP_STRAGGLER)  # shared with test_torch_trace
    assert proc.returncode == 0, proc.stderr[-3000:]
    acct = check_accounting(out)
    assert all(a["busy_ns"] > 0 for a in acct.values())
    an = analyzed_json(out)  # shared with test_torch_trace
    assert an.returncode == 0, an.stderr[-3000:]
    doc = json.loads(an.stdout)
    ov = doc["analyses"]["overview"]
    assert ov["summary"]["busy_known"] and ov["summary"]["busy_ns"] > 0
    imb = next(c for c in doc["characteristics"] if c["name"] == "load_imbalance")
    # the straggler (rank 1, 40 ms extra forward per step) is the busiest rank, not "balanced"
    assert imb["value"] > 1.1 and {e["metric"]: e["value"] for e in imb["evidence"]}["max_pe"] == 1
