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
from paradise.format import MAX_PES
from paradise.store import open_trace
from tests.accounting import union_length


def _analyze(path: Path, **options) -> dict:
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        return overview.analyze(Session(eng, trace), AnalysisConfig(options=options)).to_dict()


def _char(result: dict, name: str) -> dict:
    return next(c for c in result["characteristics"] if c["name"] == name)


# -- time accounting ------------------------------------------------------------------------------
def _accounted(row: dict) -> None:
    """busy + idle + other = span, none negative (the one accounting of a PE's time)."""
    assert min(row["busy_ns"], row["idle_ns"], row["other_ns"]) >= 0, row
    assert row["busy_ns"] + row["idle_ns"] + row["other_ns"] == row["span_ns"], row


def test_busy_plus_idle_is_span_on_every_pe(tmp_path):
    # charm_like tiles each PE's [0, end] with exec and idle rows, so nothing is left over.
    b = charm_like(pes=4, steps=3)
    result = _analyze(b.write(tmp_path / "t"))
    assert result["summary"]["busy_method"] == "union" and result["summary"]["busy_known"]
    for row in result["per_pe"]:
        _accounted(row)
        assert row["other_ns"] == 0 and row["idle_from"] == "rows"
        execs = [(r["t0"], r["t1"]) for r in b.rows[row["pe"]] if r["kind"] == "exec"]
        assert row["busy_ns"] == union_length(execs)


def test_torch_busy_is_union_of_nested_and_concurrent_rows(tmp_path):
    b = torch_like(ranks=2, steps=3)
    result = _analyze(b.write(tmp_path / "t"))
    assert [row["pe"] for row in result["per_pe"]] == [0, 1]
    for row in result["per_pe"]:
        running = [(r["t0"], r["t1"]) for r in b.rows[row["pe"]] if r["kind"] in ("exec", "phase")]
        execs = [(r["t0"], r["t1"]) for r in b.rows[row["pe"]] if r["kind"] == "exec"]
        assert row["busy_ns"] == union_length(running)
        assert row["busy_ns"] < sum(t1 - t0 for t0, t1 in execs)  # nesting is not double-counted
        _accounted(row)
        assert row["idle_from"] == "none" and row["idle_ns"] == 0  # no idle rows: the rest is other


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["exec", "idle", "phase", "mark"]),
                          st.integers(-50, 1_000), st.integers(0, 300)), min_size=1, max_size=20))
def test_accounting_matches_oracle(rows):
    # Several PEs (the sweep runs over all PEs in one ordered pass), negative start times, idle rows
    # that overlap running rows (idle is clipped to what busy leaves), instants widening the span.
    b = TraceBuilder(3, source="kineto")
    for pe, kind, t0, dur in rows:
        b.add(pe, kind, t0, None if kind == "mark" else t0 + dur, name="op")
    with tempfile.TemporaryDirectory() as d:
        result = _analyze(b.write(Path(d) / "t"))
    assert {row["pe"] for row in result["per_pe"]} == {pe for pe, *_ in rows}  # every PE with rows, each checked
    for row in result["per_pe"]:
        mine = [(t0, t0 + d, k) for pe, k, t0, d in rows if pe == row["pe"]]
        busy = union_length([(a, z) for a, z, k in mine if k in ("exec", "phase")])
        both = union_length([(a, z) for a, z, k in mine if k != "mark"])
        span = max(z if k != "mark" else a for a, z, k in mine) - min(a for a, _, _ in mine)
        if result["summary"]["busy_known"]:
            assert (row["busy_ns"], row["idle_ns"], row["other_ns"]) == (busy, both - busy, span - both)
            _accounted(row)
        else:
            assert row["busy_ns"] is None and row["other_ns"] is None and row["idle_ns"] == both


def test_pieces_replace_their_execution(tmp_path):
    # A coroutine ran in two pieces with another execution between them: busy is the pieces plus
    # that execution, not the coroutine's whole [t0, t1]; a 1.0-style exec without pieces is whole.
    b = TraceBuilder(2)
    b.exec(0, 0, 100, "main", active=30)
    b.add(0, "piece", 0, 10, name="main", exec_t0=0)
    b.add(0, "piece", 80, 100, name="main", exec_t0=0)
    b.exec(0, 40, 60, "other")
    b.idle(0, 10, 40)
    b.exec(1, 0, 100, "whole", active=30)
    result = _analyze(b.write(tmp_path / "t"))
    pe0, pe1 = result["per_pe"]
    assert (pe0["busy_ns"], pe0["idle_ns"], pe0["other_ns"]) == (10 + 20 + 20, 30, 20)
    assert pe1["busy_ns"] == 100
    assert [r for r in result["top_entries"] if r["name"] == "main"][0]["count"] == 1  # pieces are no executions


def test_idle_overlapping_busy_is_clipped_never_negative(tmp_path):
    # Idle rows that overlap executions (clock skew, nested scheduling) must not push other below 0.
    b = TraceBuilder(1)
    b.exec(0, 0, 100, "work")
    b.idle(0, 50, 150)
    row = _analyze(b.write(tmp_path / "t"))["per_pe"][0]
    assert (row["busy_ns"], row["idle_ns"], row["other_ns"], row["span_ns"]) == (100, 50, 0, 150)


def test_trace_of_instants_only(tmp_path):
    # One mark row: nothing measures busy time, so busy, other and load balance are unknown.
    b = TraceBuilder(2)
    b.add(1, "mark", 5)
    result = _analyze(b.write(tmp_path / "t"))
    assert result["per_pe"] == [{
        "pe": 1, "t_first": 5, "t_last": 5, "span_ns": 0, "busy_ns": None, "idle_ns": 0, "other_ns": None,
        "busy_share": None, "idle_from": "none", "rows": 1, "exec_rows": 0, "busy_rows": 0, "sends": 0,
        "send_bytes": 0}]
    assert result["summary"]["busy_ns"] is None and not result["summary"]["busy_known"]
    assert _char(result, "busy_share")["summary"].startswith("Busy share is unknown")
    assert _char(result, "load_imbalance")["confidence"] == 0


def test_load_balance_withheld_without_busy_rows(tmp_path):
    # Two ranks with very different idle and marks but no row that measures work: no verdict.
    b = TraceBuilder(2, source="torch")
    b.idle(0, 0, 100)
    b.idle(1, 0, 10)
    b.add(0, "step", 0, 100, step=0, name="step")
    b.add(1, "step", 0, 100, step=0, name="step")
    result = _analyze(b.write(tmp_path / "t"))
    imb = _char(result, "load_imbalance")
    assert imb["value"] is None and imb["confidence"] == 0
    assert "balanced" not in imb["summary"] and "unknown" in imb["summary"]
    share = _char(result, "busy_share")
    assert share["value"] is None and "unknown" in share["summary"]
    assert "%" not in share["summary"]


def test_load_balance_withheld_on_one_pe(tmp_path):
    b = TraceBuilder(1)
    b.exec(0, 0, 100, "work")
    imb = _char(_analyze(b.write(tmp_path / "t")), "load_imbalance")
    assert imb["value"] is None and "balanced" not in imb["summary"]


def test_phases_give_a_torch_trace_without_profiler_its_busy_time(tmp_path):
    # `paradise trace torch` without --profiler: phase, collective and step rows only. Rank 0 waits
    # in the allreduce for rank 1 (the straggler): that wait is not work, so rank 1 is the busiest.
    b = TraceBuilder(2, source="torch")
    for pe, fwd in ((0, 30), (1, 60)):
        b.add(pe, "step", 0, 200, step=0, name="step")
        b.add(pe, "phase", 0, fwd, step=0, name="forward", cat="compute")
        b.add(pe, "phase", fwd, fwd + 40, step=0, name="backward", cat="compute")
        b.collective(pe, "allreduce", fwd + 20, 150, nbytes=64)
    result = _analyze(b.write(tmp_path / "t"))
    busy = [r["busy_ns"] for r in result["per_pe"]]
    assert busy == [70, 100]  # forward + backward; the collectives' time is other
    for row in result["per_pe"]:
        _accounted(row)
    imb = _char(result, "load_imbalance")
    assert imb["value"] == round(100 / 85, 4) and "imbalanced" in imb["summary"]


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


def test_send_rows_keep_their_peer_and_size_bucket(tmp_path):
    # overview_pe groups a send's (peer_pe, size_log2) as one packed key: every peer the format
    # allows (unknown, -1, 0 .. MAX_PES - 1) and every size bucket (no bytes, 0, 1, ..., 2**50) comes
    # back as it went in, counted per (pe, peer_pe, size_log2) as computed here from the rows.
    b = TraceBuilder(2)
    peers = [None, -1, 0, 1, MAX_PES - 1]
    sizes = [None, 0, 1, 3, 1024, 1025, 2**50 + 5]
    want: dict[tuple, int] = {}
    t = 0
    for pe in (0, 1):
        for peer in peers:
            for nbytes in sizes:
                for _ in range(1 + pe):
                    b.send(pe, t, peer, nbytes, name="halo")
                    t += 1
                    key = (pe, peer, max(nbytes or 0, 1).bit_length() - 1)
                    want[key] = want.get(key, 0) + 1
    with DuckDBEngine(open_trace(b.write(tmp_path / "t"))) as eng:
        rows = [r for r in eng.query("overview_pe").to_pylist() if r["kind"] == "send"]
    assert {(r["pe"], r["peer_pe"], r["size_log2"]): r["rows"] for r in rows} == want
    assert len(rows) == len(want)


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
    assert "busy = union of running intervals" in text and "all_reduce" in text and "autograd::backward" in text


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
         "paradise: error: dask scheduler tcp://127.0.0.1:9: unreachable: connection refused"),
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


def test_analyze_engine_dask_matches_duckdb(tmp_path, cli, monkeypatch):
    # Every analysis through Dask tasks (LocalCluster) must agree with the embedded engine.
    path = torch_like(ranks=2, steps=2).write(tmp_path / "t", parts_per_pe=2)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    rc_duck, out_duck, err_duck = cli("analyze", "--json", path)
    rc_dask, out_dask, err_dask = cli("analyze", "--json", "--engine", "dask", path)
    assert list(tmp.iterdir()) == []  # no dask-scratch-space, no spill directory left behind
    duck, dask = json.loads(out_duck), json.loads(out_dask)
    assert dask["errors"] == {}, f"analyses failing only under --engine dask: {dask['errors']}"
    assert rc_duck == rc_dask == 0, err_dask
    assert dask["analyses"]["overview"] == duck["analyses"]["overview"]
