"""tune.html in headless Chromium: opens offline without errors, draws the times per round and the
predictions, and lists every candidate tried (a tune of the fake runner in tests/unit/test_tune.py)."""

from __future__ import annotations

from plotly.offline import get_plotlyjs

from paradise.report.tune_page import build
from tests.integration.test_report_browser import SECTION_STATE, SHOTS, open_page
from tests.unit.test_tune import FakeAdvisor, FakeRunner, tune


def test_tune_page_draws_history_and_predictions(browser, tmp_path):
    data = tune(tmp_path / "t", FakeRunner({"mapping": 0.7, "comm": 0.9}, seed=7), FakeAdvisor())
    data["command"]["program"] = "<img src=x onerror='window.__xss=1'>"
    page_file = tmp_path / "tune.html"
    page_file.write_text(build(data, plotly_js=get_plotlyjs()), encoding="utf-8")
    ctx, page, console, requests = open_page(browser, page_file, SHOTS / "tune.png")
    state = {s["id"]: s for s in page.evaluate(SECTION_STATE)}
    rows = page.evaluate("() => document.querySelectorAll('#history table tr').length - 1")
    xss = page.evaluate("() => window.__xss")
    ctx.close()
    assert console == [] and requests == [page_file.as_uri()] and xss is None
    tried = sum(len(t["candidates"]) for e in data["iterations"] for t in e["trials"]) + ("confirm" in data)
    assert rows == tried > 0
    plots = state["times"]["plots"]
    assert [p["title"].split(" (")[0].split(":")[0] for p in plots] == ["Run times per round", "What-if"]
    assert all(p["traces"] > 0 and p["marks"] > 0 for p in plots)
