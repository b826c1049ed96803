"""tune.html in headless Chromium: opens offline without errors, draws the times per round and the
predictions, and lists every candidate tried (a tune of the fake runner in tests/unit/test_tune.py)."""

from __future__ import annotations

from plotly.offline import get_plotlyjs

from paradise.report.tune_page import build
from tests.integration.test_report_browser import SECTION_STATE, SHOTS, browser  # noqa: F401 (fixture)
from tests.unit.test_tune import FakeAdvisor, FakeRunner, tune


def test_tune_page_draws_history_and_predictions(browser, tmp_path):  # noqa: F811
    data = tune(tmp_path / "t", FakeRunner({"mapping": 0.7, "comm": 0.9}, seed=7), FakeAdvisor())
    data["command"]["program"] = "<img src=x onerror='window.__xss=1'>"
    page_file = tmp_path / "tune.html"
    page_file.write_text(build(data, plotly_js=get_plotlyjs()), encoding="utf-8")
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    page = ctx.new_page()
    console, requests = [], []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_file.as_uri(), wait_until="load")
    page.wait_for_function("() => [...document.querySelectorAll('.plot')].every(p => p.querySelector('.main-svg'))")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "tune.png"), full_page=True)
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
