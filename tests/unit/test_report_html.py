"""`paradise report`: the page's content from real analyses and binning queries, bins that add up
to the trace's own time, and the command's refusals (existing output, bad trace, no folder)."""

from __future__ import annotations

import re
import sys
from collections import defaultdict

import pyarrow.parquet as pq
import pytest
from accounting import union_length
from report_traces import HOSTILE, hostile_charm, write_both

from paradise.cli.report import build_report
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.report.html import gather
from paradise.store import open_trace


def run_cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """The paradise console script in-process: (exit code, stdout, stderr)."""
    from paradise.cli.main import main

    monkeypatch.setattr(sys, "argv", ["paradise", *map(str, args)])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return int(exc.value.code or 0), out.out, out.err


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    return write_both(tmp_path_factory.mktemp("report"))


def _rows(path, *kinds):
    t = pq.read_table(sorted(path.glob("*.parquet")), columns=["kind", "pe", "t0", "t1", "name"]).to_pylist()
    return [r for r in t if r["kind"] in kinds and r["t1"] is not None and r["t1"] > r["t0"]]




@pytest.mark.parametrize("which", ["charm", "torch"])
def test_bins_add_up_to_the_traces_running_and_idle_time(traces, which):
    # Per PE, the bins' busy time is the union of its running intervals (exec rows; phases on
    # training traces) and their idle time the union of idle rows less busy, computed here from
    # the raw rows; the per-key roll-ups share exactly that busy time.
    path = traces[which]
    handle = open_trace(path)
    run, idle = defaultdict(list), defaultdict(list)
    for r in _rows(path, "exec", "phase"):
        run[r["pe"]].append((r["t0"], r["t1"]))
    for r in _rows(path, "idle"):
        idle[r["pe"]].append((r["t0"], r["t1"]))
    want_busy = {pe: union_length(iv) for pe, iv in run.items()}
    want_idle = {pe: union_length(iv + run[pe]) - want_busy.get(pe, 0) for pe, iv in idle.items()}
    times = pq.read_table(sorted(path.glob("*.parquet")), columns=["t0", "t1"]).to_pylist()
    t_first = min(r["t0"] for r in times)
    t_end = max(r["t1"] or r["t0"] for r in times) + 1
    with DuckDBEngine(handle) as eng:
        keys = gather.top_keys(eng, t_first, t_end, which == "torch", 2)
        t = eng.query("report_bins", t_start=t_first, t_end=t_end, bin_ns=997, n_bins=(t_end - t_first) // 997 + 1,
                      by_cat=which == "torch", keys=keys, other=gather.OTHER).to_pylist()
    assert {r["key"] for r in t if r["level"] == 1} <= {*keys, gather.OTHER, None} and len(keys) == 2
    busy, idl, by_key, pe_key = defaultdict(float), defaultdict(float), 0.0, defaultdict(float)
    for r in t:
        if r["level"] == 0:
            busy[r["pe"]] += r["busy_ns"]
            idl[r["pe"]] += r["idle_ns"]
        elif r["level"] == 1 and r["key"] is not None:
            by_key += r["busy_ns"]
        elif r["level"] == 2 and r["key"] is not None:
            pe_key[r["pe"]] += r["busy_ns"]
    assert {k: round(v) for k, v in busy.items() if v} == want_busy
    assert {k: round(v) for k, v in idl.items() if v} == {k: v for k, v in want_idle.items() if v}
    assert round(by_key) == sum(want_busy.values())  # the per-key roll-up shares the same time
    assert {k: round(v) for k, v in pe_key.items()} == want_busy  # and so does the per-PE usage roll-up


def test_utilization_matrix_is_capped_and_sized_by_bins_not_events(traces):
    handle = open_trace(traces["charm"])
    with DuckDBEngine(handle) as eng:
        b = gather.bins(eng, 0, 600_000, 4, False, n_bins=50)
    assert b["bins"] == 50 and len(b["utilization"]) == 4
    assert all(len(row) == 50 and all(0.0 <= x <= 1.0 for x in row) for row in b["utilization"])
    assert max(max(row) for row in b["utilization"]) == 1.0  # PE 0 is busy through whole bins


@pytest.fixture(scope="module")
def charm_page(traces):
    return build_report(traces["charm"], window=None)


def test_charm_report_has_every_section_and_escapes_trace_strings(charm_page):
    html = charm_page
    for section in ("utilization", "timeline", "communication", "analyses"):
        assert f'<section id="{section}">' in html
    assert "Object graph pattern per collection" in html
    assert "critical path" in html
    assert HOSTILE not in html and "<b>Evil</b>" not in html  # raw markup never reaches the page
    assert "&lt;/script&gt;" in html  # shown as text in the tables
    assert len(re.findall(r"<script>", html)) == html.count("</script>")  # no script block broken open


def test_training_report_has_the_training_section(traces):
    html = build_report(traces["torch"])
    assert '<section id="training">' in html
    for title in ("Step breakdown per rank", "Streams: kernel time", "Collectives: total time", "Checkpoint policy"):
        assert title in html


def test_report_with_hints_and_compare(traces, tmp_path, monkeypatch, capsys):
    hints = tmp_path / "hints"
    code, _, err = run_cli(monkeypatch, capsys, "analyze", traces["charm"], "--hints-out", hints)
    assert code == 0, err
    other = hostile_charm(steps=3).write(tmp_path / "other")
    html = build_report(traces["charm"], hints=hints, compare=other)
    assert '<section id="whatif">' in html and "with the hints" in html
    assert '<section id="compare">' in html and "makespan" in html


def test_report_command_refuses_to_overwrite_and_bad_inputs(traces, tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.html"
    code, stdout, err = run_cli(monkeypatch, capsys, "report", traces["torch"], "-o", out)
    assert code == 0 and out.read_text().startswith("<!DOCTYPE html>"), err
    before = out.stat().st_mtime_ns
    code, _, err = run_cli(monkeypatch, capsys, "report", traces["torch"], "-o", out)
    assert code == 2 and err == f"paradise: error: {out}: already exists; pass --force to overwrite it\n"
    assert out.stat().st_mtime_ns == before
    code, _, err = run_cli(monkeypatch, capsys, "report", traces["torch"], "-o", out, "--force")
    assert code == 0, err
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all")
    code, _, err = run_cli(monkeypatch, capsys, "report", bad, "-o", tmp_path / "b.html")
    assert code == 2 and err.count("\n") == 1 and str(bad) in err and not (tmp_path / "b.html").exists()
    under_file = out / "r.html"
    code, _, err = run_cli(monkeypatch, capsys, "report", traces["torch"], "-o", under_file)
    assert code == 2 and err == f"paradise: error: {under_file}: {out} is not a folder\n"
    part = sorted(traces["torch"].glob("*.parquet"))[0]  # a file of the trace folder read
    data = part.read_bytes()
    code, _, err = run_cli(monkeypatch, capsys, "report", traces["torch"], "-o", part, "--force")
    assert code == 2 and err == f"paradise: error: {part}: is one of the inputs; choose another output\n"
    assert part.read_bytes() == data
    code, _, err = run_cli(monkeypatch, capsys, "report", traces["torch"], "-o", out, "--force", "--window", "9:3")
    assert code == 2 and "--window '9:3'" in err and err.count("\n") == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".r.html")]  # no temporary left behind


def test_window_option_draws_the_chosen_range(traces, charm_page):
    assert "Timeline of step" in charm_page  # the default: the longest step
    html = build_report(traces["charm"], window=(0, 50_000))
    assert "Timeline of chosen" in html


def test_report_under_a_budget_without_room_for_the_replay_says_so(traces, tmp_path, monkeypatch, capsys):
    """The what-if section says why it was not replayed; the rest of the page is drawn as ever."""
    hints = tmp_path / "hints"
    code, _, err = run_cli(monkeypatch, capsys, "analyze", traces["charm"], "--hints-out", hints)
    assert code == 0, err
    html = build_report(traces["charm"], hints=hints, memory_limit=512 << 20)
    (section,) = re.findall(r'<section id="whatif">.*?</section>', html, re.S)
    assert "not replayed:" in section and "or more holds it" in section and "with the hints" not in section
    assert '<section id="analyses">' in html
