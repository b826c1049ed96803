"""report.html in headless Chromium (Debian's /usr/bin/chromium, driven over the DevTools
protocol by playwright, which downloads no browser of its own): no console errors, no network
request, every section drawn. Screenshots go to build/screenshots/ for a person to look at.

`make test` installs chromium when it is missing; outside CI the test skips without it.
"""

from __future__ import annotations

import pytest
from report_traces import write_both

from paradise.cli.report import build_report
from tests.conftest import ROOT

SHOTS = ROOT / "build" / "screenshots"
CHART_SECTIONS = {
    "charm": {"utilization": "Utilization over time", "timeline": "Timeline", "communication": "Load and communication"},
    "torch": {"utilization": "Utilization over time", "timeline": "Timeline", "communication": "Load and communication",
              "training": "Training"},
}
PLOT_TITLES = {
    "charm": ["Utilization per PE over time", "Time profile", "Usage profile", "Timeline of step", "Time per PE", "Communication matrix"],
    "torch": ["Utilization per PE over time", "Time profile", "Usage profile", "Timeline of step", "Step breakdown per rank",
              "Streams: kernel time", "Collectives: total time"],
}
SECTION_STATE = """() => [...document.querySelectorAll('section')].map(s => ({
    id: s.id, title: s.querySelector('h2').textContent,
    plots: [...s.querySelectorAll('.js-plotly-plot')].map(p => ({
        traces: (p.data || []).length,
        marks: p.querySelectorAll('.main-svg .trace, .main-svg .point, .main-svg image, .main-svg .hm').length,
        title: (p.querySelector('.gtitle') || {}).textContent || ''})),
    rows: s.querySelectorAll('table tbody tr').length}))"""


def open_page(browser, page_file, shot):
    """The page opened offline and drawn, screenshotted to `shot`; (context, page, console errors, requests)."""
    ctx = browser.new_context(viewport={"width": 1300, "height": 900}, user_agent="paradise-test")
    page = ctx.new_page()
    console, requests = [], []
    page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(page_file.as_uri(), wait_until="load")
    page.wait_for_function("() => [...document.querySelectorAll('.plot')].every(p => p.querySelector('.main-svg'))")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot), full_page=True)
    return ctx, page, console, requests


@pytest.mark.parametrize("which", ["charm", "torch"])
def test_report_opens_offline_without_errors_and_draws_every_section(browser, tmp_path, which):
    trace = write_both(tmp_path)[which]
    page_file = tmp_path / f"{which}.html"
    page_file.write_text(build_report(trace), encoding="utf-8")
    shot = SHOTS / f"report-{which}.png"
    ctx, page, console, requests = open_page(browser, page_file, shot)
    print(f"screenshot: {shot}")
    state = page.evaluate(SECTION_STATE)
    xss = page.evaluate("() => window.__xss")
    ctx.close()

    assert console == []
    assert requests == [page_file.as_uri()]  # the page itself, nothing else
    assert xss is None  # the hostile entry name stayed text
    by_id = {s["id"]: s for s in state}
    for sid, title in CHART_SECTIONS[which].items():
        assert by_id[sid]["title"] == title
        assert by_id[sid]["plots"], f"section {sid}: no chart"
        for plot in by_id[sid]["plots"]:
            assert plot["traces"] > 0 and plot["marks"] > 0, f"section {sid}: empty chart {plot}"
    titles = [p["title"] for s in state for p in s["plots"]]
    for want in PLOT_TITLES[which]:
        assert any(t.startswith(want) for t in titles), f"no chart titled {want!r} in {titles}"
    assert by_id["analyses"]["rows"] > 0
    assert shot.stat().st_size > 10_000
