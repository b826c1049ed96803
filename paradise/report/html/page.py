"""The report page: one self-contained HTML file (plotly.js, styles and data inlined; a
Content-Security-Policy that allows no network), sections in a fixed order.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from paradise.report.html import figures as F
from paradise.report.html import tables
from paradise.report.text import escape_html as escape

CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
       "img-src data: blob:; font-src data:")
"""Nothing may be fetched: the page works from file:// with the network off."""
STYLE = """
body{font-family:system-ui,sans-serif;margin:0 2rem 3rem;color:#222;max-width:1400px}
h1{font-size:1.4rem;margin:1rem 0 .2rem}h2{font-size:1.15rem;border-bottom:1px solid #ccc;margin-top:2rem}
h3{font-size:1rem;margin:1.2rem 0 .3rem}nav a{margin-right:1rem}.meta{color:#555}
table{border-collapse:collapse;margin:.4rem 0 1rem;font-size:.85rem}caption,.cap{text-align:left;font-weight:600;margin:.3rem 0}
th,td{border:1px solid #ddd;padding:2px 6px;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right}
td.none{color:#999}td.evidence{color:#555;font-size:.8rem}.note{color:#666;font-size:.85rem}.plot{min-height:200px}
"""


def _config() -> str:
    return json.dumps({"displaylogo": False, "responsive": True})


def embed(fig: Any) -> str:
    """A figure as a div and the script that draws it; the JSON is escaped for a <script> block."""
    spec = fig.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    div = "plot-" + hashlib.sha1(spec.encode()).hexdigest()[:16]  # the same page for the same trace
    return (f'<div id="{div}" class="plot"></div><script>(function(){{var f={spec};'
            f'Plotly.newPlot("{div}",f.data,f.layout,{_config()});}})();</script>')


def _section(sid: str, title: str, body: str) -> tuple[str, str, str]:
    return sid, title, f'<section id="{sid}"><h2>{escape(title)}</h2>{body}</section>'


def _utilization(g: dict[str, Any]) -> tuple[str, str, str]:
    b = g["bins"]
    what = "categories" if b["by"] == "category" else "entry methods"
    span = (f"the window {b['t_start']}:{b['t_end']} ns" if g.get("zoomed") else "the run")
    note = (f"<p class=note>{b['bins']} bins of {b['bin_ns'] / 1e6:.4g} ms over {span}, computed in the engine "
            "(report_bins.sql): busy = the time a PE was running something (an execution that suspended counts "
            f"only while it ran; overlapping rows once); {what} get their own time (where one ran inside another, "
            f"the inner one's time is its own); the profile stacks the largest {len(b['profile'])} {what}.</p>")
    if not b.get("has_running"):
        note += ("<p class=note>This trace records no running time in this range (no executions, phases or "
                 "collectives): busy time is unknown here, and the charts below show only idle time.</p>")
    return _section("utilization", "Utilization over time", note + embed(F.utilization(b)) + embed(F.profile(b))
                    + embed(F.usage(b)))


def _timeline(g: dict[str, Any]) -> tuple[str, str, str]:
    w = g["window"]
    fig, dropped = F.timeline(w, g["critical"], g["training"])
    pieces = sum(1 for k in w["execs"]["kind"] if k == "piece")
    note = (f"<p class=note>{len(w['execs']['t0']):,} running intervals"
            + (f" ({pieces:,} of them pieces of executions that suspended or had others run inside them)" if pieces else "")
            + f" and {len(w['msgs']['t_send']):,} messages in the window"
            + (f"; {dropped} further lanes not drawn" if dropped else "")
            + ("; the critical path (scheduling analysis) in red" if g["critical"] else "") + ".</p>")
    return _section("timeline", "Timeline", note + embed(fig))


def _communication(a: dict[str, Any], pes: int) -> tuple[str, str, str] | None:
    ov, comm = a.get("overview", {}), a.get("communication", {})
    body = ""
    if ov.get("per_pe"):
        body += embed(F.pe_time(ov["per_pe"]))
    if ov.get("comm_matrix"):
        body += embed(F.comm_matrix(ov["comm_matrix"], pes))
    if comm.get("patterns"):
        rows = [{"collection": coll, **{k: v for k, v in p.items() if k != "evidence"}, **(p.get("evidence") or {})}
                for coll, ps in sorted(comm["patterns"].items()) for p in ps]
        body += "<h3>Object graph pattern per collection</h3>" + tables.table(rows)
    return _section("communication", "Load and communication", body) if body else None


def _training(a: dict[str, Any]) -> tuple[str, str, str] | None:
    tr, res = a.get("training", {}), a.get("resilience", {})
    body = ""
    if tr.get("breakdown"):
        body += embed(F.step_breakdown(tr["breakdown"]))
    if tr.get("streams"):
        body += embed(F.streams(tr["streams"]))
    if tr.get("collectives"):
        body += embed(F.collectives(tr["collectives"]))
    body += "<h3>Stragglers</h3>" + (tables.table(tr["stragglers"]) if tr.get("stragglers")
                                      else "<p class=note>no straggler rank found</p>")
    if res.get("policy"):
        body += "<h3>Checkpoint policy</h3>" + tables.value(res["policy"])
    return _section("training", "Training", body) if tr else None


def _whatif(w: dict[str, Any] | None) -> tuple[str, str, str] | None:
    if not w:
        return None
    if "not_replayed" in w:
        return _section("whatif", "Hints: what-if", f"<p class=note>not replayed: {escape(w['not_replayed'])}</p>")
    pes = [str(i) for i in range(len(w["pe_load_ns"]))]
    fig = F.before_after(pes, [x / 1e6 for x in w["baseline_pe_load_ns"]], [x / 1e6 for x in w["pe_load_ns"]],
                         f"Load per PE now and under {', '.join(w['hints'])} (what-if replay)", ("now", "with the hints"))
    note = (f"<p>measured makespan {w['measured_makespan_ns'] / 1e6:.4g} ms; predicted under the hints "
            f"{w['predicted_makespan_ns'] / 1e6:.4g} ms ({escape(str(w['predicted_speedup']))}x).</p>")
    return _section("whatif", "Hints: what-if", note + embed(fig))


def _compare(c: dict[str, Any] | None) -> tuple[str, str, str] | None:
    if not c:
        return None
    ch = [x for x in c["changes"] if x["unit"] == "ns"][:20]
    fig = F.before_after([x["metric"] for x in ch], [x["base"] / 1e6 for x in ch], [x["candidate"] / 1e6 for x in ch],
                         "Before and after (time figures, significant first)", ("base", "candidate"))
    return _section("compare", "Compared with another run", embed(fig) + tables.table(c["changes"]))


def _analyses(a: dict[str, Any]) -> tuple[str, str, str]:
    body = "".join(f"<h3>{escape(name)}</h3>{tables.analysis(r)}" for name, r in a.items())
    return _section("analyses", "Characteristics and hints", body)


def build(info: dict[str, Any], analyses: dict[str, Any], gathered: dict[str, Any],
          whatif: dict[str, Any] | None = None, compare: dict[str, Any] | None = None,
          errors: dict[str, str] | None = None, plotly_js: str = "") -> str:
    """The whole page as text."""
    pes = max((r["pe"] for r in analyses.get("overview", {}).get("per_pe") or []), default=0) + 1
    parts = [_utilization(gathered), _timeline(gathered), _communication(analyses, pes),
             _training(analyses) if gathered["training"] else None, _whatif(whatif), _compare(compare),
             _analyses(analyses)]
    sections = [p for p in parts if p is not None]
    nav = "".join(f'<a href="#{sid}">{escape(title)}</a>' for sid, title, _ in sections)
    errs = "".join(f"<p class=note>analysis {escape(k)} failed: {escape(v)}</p>" for k, v in (errors or {}).items())
    head = (f"<h1>paradise report: {escape(str(info.get('program') or '?'))}</h1>"
            f"<p class=meta>{escape(str(info.get('path')))} · {escape(str(info.get('source')))} · "
            f"{info.get('pes')} PEs · {info.get('rows', 0):,} rows · "
            f"{'finished' if info.get('complete') else 'did not finish (no clean close)'}</p>")
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
            f"<title>paradise report: {escape(str(info.get('program') or '?'))}</title><style>{STYLE}</style>"
            f"<script>{plotly_js}</script></head><body>{head}<nav>{nav}</nav>{errs}{''.join(h for _, _, h in sections)}</body></html>")
