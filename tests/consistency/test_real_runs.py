"""Cross-view consistency on example programs traced for real: charm4py under `charmrun +p2`
(stencil2d, whose `main` is a coroutine; a program of threaded entry methods) and torch under
torchrun (gloo, 2 ranks) with and without --profiler. Few, small runs: each start costs seconds."""

from __future__ import annotations

import html
import importlib.util
from pathlib import Path

import duckdb
import pytest
from consistency import checks
from consistency import views as V

from tests import shared_runs
from tests.conftest import ROOT

STENCIL = ("charm", ROOT / "examples" / "stencil2d.py", "--grid", "4", "4", "--block", "256", "--iters", "8")

RUNS = {  # name -> (traced run (tests/shared_runs.py), its `paradise trace` options, charm style)
    "stencil2d": (STENCIL, (), True),
    "threaded": (shared_runs.THREADED, (), True),
    "ddp": (shared_runs.DDP_STRAGGLER, (), False),
    "ddp_profiler": (shared_runs.DDP_PROFILED, ("--profiler",), False),
}
"""Each run traced once per session; threaded, ddp and ddp_profiler are shared with tests/integration."""


KNOWN: dict[tuple[str, str], str] = {}
"""Checks that fail on what the tracer writes today (strict: they must fail, so a fix shows up)."""


def _needs(module: str) -> None:
    """Skips without the package (found, not imported: charm4py prints on exit when imported unstarted)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


def _traced(traced_run, run: str) -> Path:
    command, opts, _ = RUNS[run]
    out, proc = traced_run(*command, opts=opts)
    assert proc.returncode == 0, f"traced run failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return out


def _get(trace_cache, traced_run, run: str):
    if run == "ddp_profiler_kineto":  # the profiler's own trace, imported beside the tracer's
        parent = _get(trace_cache, traced_run, "ddp_profiler")
        return trace_cache(run, lambda w: parent.path / "kineto" / "profile.parquet", False)
    return trace_cache(run, lambda w: _traced(traced_run, run), RUNS[run][2])


@pytest.mark.parametrize("run", [*RUNS, "ddp_profiler_kineto"])
@pytest.mark.parametrize("check", list(checks.ALL))
def test_real_run_views_agree(trace_cache, traced_run, run, check):
    _needs("torch" if run.startswith("ddp") else "charm4py")
    t = _get(trace_cache, traced_run, run)
    if check not in checks.applicable(t):
        pytest.skip(f"{check} does not apply to {run}")
    if (check, run) in KNOWN:
        with pytest.raises(AssertionError):
            checks.ALL[check](t)
        pytest.xfail(KNOWN[(check, run)])
    checks.ALL[check](t)


def _rows(path: Path, sql: str) -> list[tuple]:
    con = duckdb.connect()
    con.sql(f"CREATE VIEW ev AS SELECT * FROM read_parquet('{path}/*.parquet', union_by_name=true)")
    return con.sql(sql).fetchall()


def test_stencil_window_zooms_and_shows_halos_after_main_suspends(trace_cache, traced_run):
    # After main's first piece ends (main waits on futures), halo executions run on PE 0: a
    # window there shows them, main only as its pieces, every bar inside the window.
    _needs("charm4py")
    t = _get(trace_cache, traced_run, "stencil2d")
    pieces = _rows(t.path, "SELECT t0, t1 FROM ev WHERE kind = 'piece' AND name = 'main' ORDER BY t0")
    assert len(pieces) >= 2, "main ran in one piece: it never suspended"
    w0 = pieces[0][1]
    w1 = max(r[0] for r in _rows(t.path, "SELECT max(t1) FROM ev WHERE kind = 'exec' AND name = 'halo'"))
    halos = _rows(t.path, f"SELECT count(*) FROM ev WHERE kind = 'exec' AND name = 'halo' AND t0 >= {w0} AND pe = 0")
    assert halos[0][0] > 0
    figs = V.report(t.path, t.work / "window.html", "--window", f"{w0}:{w1}")
    tl = V.figure(figs, "Timeline")
    assert tl["layout"]["xaxis"]["range"] == [w0 / 1e6, w1 / 1e6]
    bars = {html.unescape(tr["name"]): tr for tr in tl["data"] if tr.get("type") == "bar"}
    assert "halo" in bars and any(y == "PE 0" for y in bars["halo"]["y"])
    for tr in bars.values():
        for base, length in zip(tr["base"], tr["x"]):
            assert w0 / 1e6 - 1e-9 <= base and base + length <= w1 / 1e6 + 1e-6
    main_ms = sum(bars["main"]["x"]) if "main" in bars else 0.0
    want = sum(max(0, min(b, w1) - max(a, w0)) for a, b in pieces) / 1e6
    assert abs(main_ms - want) <= 1e-3, f"main drawn {main_ms} ms, its pieces in the window {want} ms"
    heat = V.figure(figs, "Utilization per PE")
    assert heat["layout"]["xaxis"]["range"] == [w0 / 1e6, w1 / 1e6]
    usage = V.figure(figs, "Usage profile")
    pe0 = sum(dict(zip(map(str, tr["x"]), tr["y"])).get("0", 0.0) for tr in usage["data"] if tr["name"] != "idle")
    assert 0 < pe0 < 1


def test_torch_without_profiler_has_busy_time_and_a_report(trace_cache, traced_run):
    # The README's `paradise trace torch` run: busy time from the phases, a non-empty report.
    _needs("torch")
    t = _get(trace_cache, traced_run, "ddp")
    rows = V.per_pe(t.doc)
    assert all(r["busy_ns"] > 0 for r in rows.values())
    tl = V.figure(t.figures, "Timeline")
    assert any(tr.get("type") == "bar" and tr["x"] for tr in tl["data"])
    usage = V.figure(t.figures, "Usage profile")
    assert usage["layout"]["yaxis"]["range"] == [0, 1]
    assert any(tr["name"] != "idle" and any(y > 0 for y in tr["y"]) for tr in usage["data"])
