"""Overview analysis, its report, and the `paradise analyze` command around it."""

from __future__ import annotations

import json
import sys
import tempfile
import types
from pathlib import Path

import pytest
from builders import TraceBuilder, charm_like, torch_like
from hypothesis import given, settings
from hypothesis import strategies as st

from paradise.analyses import ANALYSES, overview
from paradise.analyses.base import AnalysisConfig, AnalysisResult
from paradise.analyses.runner import run_analyses, write_hints
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.errors import OutputExists
from paradise.store import open_trace


def _analyze(path: Path, **options) -> dict:
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        return overview.analyze(Session(eng, trace), AnalysisConfig(options=options)).to_dict()


def _naive_union(intervals: list[tuple[int, int]]) -> int:
    """Length of a union of intervals, the obvious way (test oracle, tiny inputs only)."""
    total, end = 0, None
    for t0, t1 in sorted(intervals):
        if end is None or t0 > end:
            total += t1 - t0
            end = t1
        elif t1 > end:
            total += t1 - end
            end = t1
    return total


def _char(result: dict, name: str) -> dict:
    return next(c for c in result["characteristics"] if c["name"] == name)


# -- time accounting ------------------------------------------------------------------------------
def test_busy_plus_idle_is_span_on_every_pe(tmp_path):
    # charm_like tiles each PE's [0, end] with exec and idle rows, so nothing is left over.
    b = charm_like(pes=4, steps=3)
    result = _analyze(b.write(tmp_path / "t"))
    assert result["summary"]["busy_method"] == "sum"
    for row in result["per_pe"]:
        assert row["busy_ns"] + row["idle_ns"] == row["span_ns"], row
        assert row["other_ns"] == 0 and row["idle_from"] == "rows"
        execs = [r for r in b.rows[row["pe"]] if r["kind"] == "exec"]
        assert row["busy_ns"] == sum(r["t1"] - r["t0"] for r in execs)


def test_torch_busy_is_union_of_nested_and_concurrent_rows(tmp_path):
    b = torch_like(ranks=2, steps=3)
    result = _analyze(b.write(tmp_path / "t"))
    assert result["summary"]["busy_method"] == "union"
    for row in result["per_pe"]:
        execs = [(r["t0"], r["t1"]) for r in b.rows[row["pe"]] if r["kind"] == "exec"]
        assert row["busy_ns"] == _naive_union(execs)
        assert row["busy_ns"] < sum(t1 - t0 for t0, t1 in execs)  # nesting is not double-counted
        assert row["busy_ns"] + row["idle_ns"] == row["span_ns"] and row["idle_from"] == "span-busy"


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(-50, 1_000), st.integers(0, 300)), min_size=1, max_size=20))
def test_union_busy_matches_oracle(intervals):
    # Several PEs (the union query sweeps all PEs in one ordered pass) and negative start times.
    b = TraceBuilder(3, source="kineto")
    for pe, t0, dur in intervals:
        b.exec(pe, t0, t0 + dur, "op")
    with tempfile.TemporaryDirectory() as d:
        result = _analyze(b.write(Path(d) / "t"))
    for row in result["per_pe"]:
        expected = _naive_union([(t0, t0 + d) for pe, t0, d in intervals if pe == row["pe"]])
        assert row["busy_ns"] == expected


def test_auto_switches_to_union_when_serial_rows_overlap(tmp_path):
    # A "synthetic" (serial) source whose execs overlap: the sum (150) would exceed the span (100).
    b = TraceBuilder(1)
    b.exec(0, 0, 100, "outer")
    b.exec(0, 20, 70, "inner")
    result = _analyze(b.write(tmp_path / "t"))
    assert result["summary"]["busy_method"] == "union" and result["per_pe"][0]["busy_ns"] == 100


def test_active_time_counts_instead_of_the_interval(tmp_path):
    # Two coroutine executions overlap in wall time; only their active time is work.
    b = TraceBuilder(1)
    b.exec(0, 0, 100, "waiter", active=30)
    b.exec(0, 40, 60, "other")
    result = _analyze(b.write(tmp_path / "t"))
    assert result["per_pe"][0]["busy_ns"] == 30 + 20


def test_trace_of_instants_only(tmp_path):
    # One mark row: a PE without span; nothing divides by zero, the summaries say why.
    b = TraceBuilder(2)
    b.add(1, "mark", 5)
    result = _analyze(b.write(tmp_path / "t"))
    assert result["per_pe"] == [{
        "pe": 1, "t_first": 5, "t_last": 5, "span_ns": 0, "busy_ns": 0, "idle_ns": 0, "other_ns": 0,
        "busy_share": None, "idle_from": "span-busy", "rows": 1, "exec_rows": 0, "sends": 0, "send_bytes": 0}]
    assert _char(result, "busy_share")["summary"] == "No PE has a time span; busy share is undefined."
    assert _char(result, "load_imbalance")["confidence"] < 1


@pytest.mark.parametrize("make", [lambda: charm_like(pes=3, steps=3), lambda: torch_like(ranks=3, steps=2)])
def test_splitting_files_changes_no_aggregate(tmp_path, make):
    b = make()
    whole = _analyze(b.write(tmp_path / "whole"))
    split = _analyze(b.write(tmp_path / "split", parts_per_pe=3))
    assert len(open_trace(tmp_path / "split").files) == 3 * b.pes
    assert split == whole


def test_dask_engine_gives_the_same_result(tmp_path):
    from paradise.engines.dask_engine import DaskEngine

    path = torch_like(ranks=3, steps=2).write(tmp_path / "t", parts_per_pe=2)
    trace = open_trace(path)
    with DaskEngine(trace, files_per_task=1) as eng:
        via_dask = overview.analyze(Session(eng, trace)).to_dict()
    assert via_dask == _analyze(path)


# One query per section, as the overview computed them before it rolled every section up from one
# scan (overview_pe): the oracle the roll-ups must equal.
_DIRECT = {
    "per_pe": """SELECT pe, count(*) AS rows, min(t0) AS t_first, max(coalesce(t1, t0)) AS t_last,
        count(*) FILTER (WHERE kind = 'exec') AS exec_rows,
        count(*) FILTER (WHERE kind = 'send') AS sends,
        coalesce(sum(bytes) FILTER (WHERE kind = 'send'), 0) AS send_bytes FROM events GROUP BY pe""",
    "exec_ns": "SELECT coalesce(sum(coalesce(active, t1 - t0)), 0) AS n FROM events WHERE kind = 'exec'",
    "top_entries": """SELECT name, coll, cat, count(*) AS count, coalesce(sum(coalesce(active, t1 - t0)), 0) AS total_ns,
        max(coalesce(active, t1 - t0)) AS max_ns FROM events WHERE kind = 'exec' GROUP BY ALL""",
    "comm_matrix": """SELECT pe, peer_pe, count(*) AS messages, coalesce(sum(bytes), 0) AS bytes
        FROM events WHERE kind = 'send' GROUP BY ALL""",
    "collectives": """SELECT name, pe, count(*) AS count, coalesce(sum(bytes), 0) AS bytes,
        sum(coalesce(t1, t0) - t0) AS total_ns, max(coalesce(t1, t0) - t0) AS max_ns
        FROM events WHERE kind = 'collective' GROUP BY ALL""",
}


def _rows(rows: list[dict], keys: list[str]) -> list[tuple]:
    return sorted((tuple(r[k] for k in keys) for r in rows), key=lambda t: [(v is None, v) for v in t])


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["exec", "send", "collective", "idle", "mark"]), st.integers(0, 2),
                          st.integers(-50, 1_000), st.integers(0, 300), st.integers(0, 3)), min_size=1, max_size=40))
def test_sections_equal_one_query_per_section(events):
    # Execs carry their sender's peer_pe and sends their target's name: neither may split a row.
    b = TraceBuilder(3)
    for kind, pe, t0, dur, k in events:
        if kind == "exec":
            b.exec(pe, t0, t0 + dur, "xyz"[k % 3], peer_pe=k % 2, active=dur // 2 if k == 3 else None,
                   coll=None if k == 0 else "C#0", cat=None if k < 2 else "cpu_op")
        elif kind == "send":
            b.send(pe, t0, None if k == 3 else k, 8 * k, name="xyz"[k % 3], coll="C#0")
        elif kind == "collective":
            b.collective(pe, "ar" if k % 2 else "bc", t0, t0 + dur, nbytes=64 * k)
        elif kind == "idle":
            b.idle(pe, t0, t0 + dur)
        else:
            b.add(pe, "mark", t0)
    with tempfile.TemporaryDirectory() as d:
        trace = open_trace(b.write(Path(d) / "t"))
        with DuckDBEngine(trace) as eng:
            got = overview.analyze(Session(eng, trace), AnalysisConfig(options={"top": 1000})).to_dict()
            want = {name: eng.sql(sql).to_pylist() for name, sql in _DIRECT.items()}
    assert got["summary"]["exec_ns"] == want["exec_ns"][0]["n"]
    for section in ("per_pe", "top_entries", "comm_matrix", "collectives"):
        keys = list(want[section][0]) if want[section] else []
        assert _rows(got[section], keys) == _rows(want[section], keys), section
    assert len(got["top_entries"]) == len(want["top_entries"])


# -- characteristics and sections -----------------------------------------------------------------
def test_load_imbalance_is_max_over_mean_busy(tmp_path):
    b = charm_like(pes=4, steps=2)
    result = _analyze(b.write(tmp_path / "t"))
    busy = [sum(r["t1"] - r["t0"] for r in b.rows[pe] if r["kind"] == "exec") for pe in range(4)]
    imb = _char(result, "load_imbalance")
    assert imb["value"] == round(max(busy) / (sum(busy) / 4), 4)
    ev = {e["metric"]: e for e in imb["evidence"]}
    assert ev["max_pe"]["value"] == 0  # charm_like doubles PE 0's costs
    assert ev["max_over_mean"]["threshold"] == overview.IMBALANCE_THRESHOLD
    share = _char(result, "busy_share")["value"]
    assert set(share) == {"0", "1", "2", "3"} and all(0 < v <= 1 for v in share.values())


def test_top_entries_comm_and_collectives(tmp_path):
    b = torch_like(ranks=2, steps=3)
    b.send(0, 10, 1, 100, name="halo")
    b.send(0, 20, 1, 300, name="halo")
    result = _analyze(b.write(tmp_path / "t"), top=2)
    assert len(result["top_entries"]) == 2
    totals = [e["total_ns"] for e in result["top_entries"]]
    assert totals == sorted(totals, reverse=True) and result["top_entries"][0]["name"] == "autograd::backward"
    assert result["comm_matrix"] == [{"pe": 0, "peer_pe": 1, "messages": 2, "bytes": 400}]
    # 3 steps x 1 all_reduce of 4 MiB per rank
    assert [(c["pe"], c["count"], c["bytes"]) for c in result["collectives"]] == [
        (0, 3, 3 * (4 << 20)), (1, 3, 3 * (4 << 20))]


def test_result_is_json_safe_and_deterministic(tmp_path):
    path = charm_like(pes=3, steps=2).write(tmp_path / "t")
    a, b = _analyze(path), _analyze(path)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_report_renders(tmp_path):
    from rich.console import Console

    from paradise.report.overview import render

    console = Console(width=120, record=True, color_system=None)
    render(console, _analyze(torch_like(ranks=2, steps=2).write(tmp_path / "t")))
    text = console.export_text()
    assert "busy = union of exec intervals" in text and "all_reduce" in text and "autograd::backward" in text


# -- the analyze loop and hints -------------------------------------------------------------------
def test_a_failing_analysis_does_not_hide_the_others(tmp_path, monkeypatch):
    broken = types.ModuleType("paradise.analyses._broken_for_test")
    broken.applies = lambda trace: True

    def analyze(session, config):
        raise RuntimeError("boom\nsecond line")

    broken.analyze = analyze
    monkeypatch.setitem(sys.modules, "paradise.analyses._broken_for_test", broken)
    trace = open_trace(charm_like(pes=2, steps=1).write(tmp_path / "t"))
    with DuckDBEngine(trace) as eng:
        results, errors = run_analyses(Session(eng, trace), AnalysisConfig(), names=("_broken_for_test", "overview"))
    assert list(results) == ["overview"]
    assert errors == {"_broken_for_test": "RuntimeError: boom"}


def _hint(kind: str = "comm") -> dict:
    from hints.format import make_hint, provenance

    prov = provenance(trace_fingerprint="f", program="p", pes=2, source="synthetic")
    return make_hint(kind, {"rules": []}, provenance=prov, justified_by=[])


def test_write_hints_never_overwrites_without_force(tmp_path):
    results = {"x": AnalysisResult("x", hints=[_hint()]), "y": AnalysisResult("y", hints=[_hint()])}
    written, warnings = write_hints(results, tmp_path / "h", force=False)
    assert written == [str(tmp_path / "h" / "comm.json")]
    assert warnings == ["analysis 'y' made a second 'comm' hint (first from 'x'); skipped"]
    with pytest.raises(OutputExists, match="comm.json: already exists; pass --force"):
        write_hints(results, tmp_path / "h", force=False)
    assert write_hints(results, tmp_path / "h", force=True)[0] == written


# -- the command ----------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: charm_like(pes=4, steps=2), lambda: torch_like(ranks=2, steps=2)])
def test_analyze_json_structure_and_no_analysis_fails(tmp_path, cli, make):
    path = make().write(tmp_path / "t")
    rc, out, err = cli("analyze", "--json", "--top", "3", path)
    assert "warning" not in err, err  # every analysis in ANALYSES ran cleanly on this trace
    assert rc == 0, err
    doc = json.loads(out)
    assert set(doc) == {"trace", "analyses", "characteristics", "hints", "errors"}
    assert doc["errors"] == {} and doc["hints"] == []
    assert doc["trace"]["path"] == str(path) and doc["trace"]["rows"] == open_trace(path).num_rows
    assert "overview" in doc["analyses"] and set(doc["analyses"]) <= set(ANALYSES)
    names = {(c["analysis"], c["name"]) for c in doc["characteristics"]}
    assert {("overview", "busy_share"), ("overview", "load_imbalance")} <= names
    assert len(doc["analyses"]["overview"]["top_entries"]) <= 3


def test_analyze_only_runs_the_named_analyses_in_report_order(tmp_path, cli):
    path = charm_like(pes=4, steps=2).write(tmp_path / "t")
    rc, out, err = cli("analyze", "--json", path)
    assert rc == 0, err
    everything = json.loads(out)["analyses"]
    rc, out, err = cli("analyze", "--json", "--only", "placement, overview", path)
    assert rc == 0, err
    only = json.loads(out)["analyses"]
    assert list(only) == ["overview", "placement"]  # ANALYSES order, whatever order --only gave
    assert only == {name: everything[name] for name in only}  # as in the full run
    rc, out, err = cli("analyze", "--json", "--only", "training", path)  # named, but not for a Charm trace
    assert rc == 0 and json.loads(out)["analyses"] == {}, err


def test_analyze_text_report(tmp_path, cli):
    rc, out, err = cli("analyze", charm_like(pes=2, steps=2).write(tmp_path / "t"))
    assert rc == 0, err
    assert "overview" in out and "time per PE" in out and "Load is imbalanced" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["{tmp}/missing"], "paradise: error: {tmp}/missing: no such file or directory"),
        (["{tmp}/junk.parquet"], "paradise: error: {tmp}/junk.parquet: not a Parquet file"),
        (["--engine", "dask", "--scheduler", "tcp://127.0.0.1:9", "{trace}"],
         "paradise: error: dask scheduler tcp://127.0.0.1:9: unreachable within 5 s"),
        (["--only", "overview,bogus", "{trace}"],
         "paradise: error: --only 'overview,bogus': unknown analysis 'bogus' (choose from overview, placement"),
        (["--only", ",", "{trace}"], "paradise: error: --only ',': no analysis named"),
    ],
)
def test_analyze_bad_input_is_one_line_exit_2(tmp_path, cli, args, message):
    (tmp_path / "junk.parquet").write_text("not parquet")
    trace = charm_like(pes=1, steps=1).write(tmp_path / "t")
    fill = {"tmp": str(tmp_path), "trace": str(trace)}
    rc, out, err = cli("analyze", *[a.format(**fill) for a in args])
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message.format(**fill)), err


def test_analyze_hints_out_never_overwrites_without_force(tmp_path, cli):
    # Hints come from whichever analyses make them on this trace; an unrelated file is left alone.
    hints = tmp_path / "hints"
    hints.mkdir()
    (hints / "unrelated.json").write_text("{}")
    trace = charm_like(pes=4, steps=3).write(tmp_path / "t")
    rc, out, err = cli("analyze", "--json", "--hints-out", hints, trace)
    assert rc == 0, err
    written = json.loads(out)["hints"]
    assert all(Path(p).parent == hints and Path(p).exists() for p in written)
    assert (hints / "unrelated.json").read_text() == "{}"
    if written:
        rc, out, err = cli("analyze", "--hints-out", hints, trace)
        assert rc == 2 and err.strip().endswith("already exists; pass --force to overwrite it"), err
        assert len(err.strip().splitlines()) == 1
        rc, out, err = cli("analyze", "--hints-out", hints, "--force", trace)
        assert rc == 0, err


def test_analyze_engine_dask_matches_duckdb(tmp_path, cli):
    # Every analysis through Dask tasks (LocalCluster) must agree with the embedded engine.
    path = torch_like(ranks=2, steps=2).write(tmp_path / "t", parts_per_pe=2)
    rc_duck, out_duck, err_duck = cli("analyze", "--json", path)
    rc_dask, out_dask, err_dask = cli("analyze", "--json", "--engine", "dask", path)
    duck, dask = json.loads(out_duck), json.loads(out_dask)
    assert dask["errors"] == {}, f"analyses failing only under --engine dask: {dask['errors']}"
    assert rc_duck == rc_dask == 0, err_dask
    assert dask["analyses"]["overview"] == duck["analyses"]["overview"]
