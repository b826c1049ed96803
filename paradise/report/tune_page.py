"""The tune's HTML page (DIR/tune.html), in the report's style: the summary table, times per round
and what-if's prediction against each measured run, all read from tune.json."""

from __future__ import annotations

from html import escape
from typing import Any

from paradise.report.html.page import CSP, STYLE, embed
from paradise.tune.summary import rows


def _times(data: dict[str, Any]) -> Any:
    import plotly.graph_objects as go

    fig = go.Figure()
    series: dict[str, tuple[list[str], list[float]]] = {}
    for key, run in data["runs"].items():
        o = run["outcome"]
        if run.get("traced") or not o.get("ok"):
            continue
        it, stage, rnd, who = key.split("/")
        xs, ys = series.setdefault(f"{it} {stage}: {who}", ([], []))
        xs.append(rnd)
        ys.append(o["seconds"])
    for name, (xs, ys) in series.items():
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", name=name))
    fig.update_layout(title="Run times per round (interleaved)", xaxis_title="round", yaxis_title="s", height=380)
    return fig


def _predictions(data: dict[str, Any]) -> Any:
    import plotly.graph_objects as go

    pts = [(r["key"], r["predicted_s"], r["measured_s"]) for e in data.get("iterations", []) for t in e["trials"]
           for c in t["candidates"] for r in c["runs"] if r.get("predicted_s") is not None]
    fig = go.Figure(go.Scatter(x=[p[1] for p in pts], y=[p[2] for p in pts], text=[p[0] for p in pts],
                               mode="markers", name="runs"))
    if pts:
        lo, hi = min(min(p[1], p[2]) for p in pts), max(max(p[1], p[2]) for p in pts)
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", name="exact"))
    fig.update_layout(title="What-if: predicted vs measured per hinted run (calibrated ratio x its round's baseline run)",
                      xaxis_title="predicted s", yaxis_title="measured s", height=380)
    return fig


def _table(data: dict[str, Any]) -> str:
    cols = ["iteration", "stage", "candidate", "rounds", "median_s", "baseline_median_s", "measured_ratio",
            "replay_ratio", "predicted_ratio", "p_value", "alpha", "kept", "reason"]
    head = "".join(f"<th>{c}</th>" for c in cols)
    body = "".join("<tr>" + "".join(
        f"<td class=num>{v:.4g}</td>" if isinstance(v, float) else f"<td>{escape(str(v if v is not None else '-'))}</td>"
        for v in (r[c] for c in cols)) + "</tr>" for r in rows(data))
    return f"<table><caption>Candidates tried</caption><tr>{head}</tr>{body}</table>"


def _pct(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.1%}"


def _iterations(data: dict[str, Any]) -> str:
    """Per iteration: what it started from, what the analyses proposed, what was kept."""
    items = []
    for e in data.get("iterations", []):
        prop = e.get("proposed") or {}
        cands = "; ".join(f"{k}: {v['summary']}" for k, v in (prop.get("candidates") or {}).items()) or "none"
        info = "; ".join(f"{k}: {v}" for k, v in (prop.get("information") or {}).items())
        start = "+".join(e["baseline_kinds"]) or "the plain program"
        kept = "+".join(e.get("chosen") or []) or "nothing"
        items.append(f"<li>iteration {e['index']} from {escape(start)}: proposed {escape(cands)}"
                     + (f" (information: {escape(info)})" if info else "") + f"; kept <b>{escape(kept)}</b></li>")
    return f"<ul>{''.join(items)}</ul>"


def build(data: dict[str, Any], plotly_js: str = "") -> str:
    cmd = data.get("command", {})
    title = f"paradise tune: {cmd.get('program', '?')}"
    best = data.get("best", {})
    w = data.get("whatif") or {}
    meta = (f"<p class=meta>{escape(' '.join(map(str, cmd.get('argv') or [])))}</p>"
            f"<p>best: <b>{escape('+'.join(best.get('kinds') or []) or 'no hint')}</b>"
            + (f", {data['speedup']:.2f}x" if data.get("speedup") else "")
            + f" · stopped: {escape(str(data.get('stopped')))} · {data.get('runs_measured')} runs</p>"
            f"<p class=note>what-if median abs error per hinted run: {_pct(w.get('median_abs_error_uncalibrated'))} "
            f"as replayed, {_pct(w.get('median_abs_error_calibrated'))} after calibration. Test: one-sided paired t-test on per-round log ratios, "
            f"confidence {cmd.get('confidence')} per iteration (docs/tune.md).</p>")
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>{escape(title)}</title><style>{STYLE}</style><script>{plotly_js}</script></head><body>"
            f"<h1>{escape(title)}</h1>{meta}<section id=history><h2>Iterations</h2>{_iterations(data)}{_table(data)}</section>"
            f"<section id=times><h2>Times and predictions</h2>{embed(_times(data))}{embed(_predictions(data))}"
            "</section></body></html>")
