"""The report's charts as plotly figures, built from small dicts (gather.py's output and the
analyses' to_dict()). Every string that comes from a trace passes through `text()` first:
plotly reads a subset of HTML in labels, and a trace's names are data, never markup.
"""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go

from paradise.report.text import escape_html

HEIGHT_PX = 380
LANE_PX = 22
"""Height of one timeline lane (a PE, a rank's thread or stream)."""
MAX_LANES = 64
"""Timeline lanes drawn; further lanes are left out (named in the section's note)."""
MAX_MATRIX_PES = 256
"""Above this many PEs the communication matrix sums consecutive PEs into this many groups."""


MAX_LABEL_CHARS = 120
"""Longest label or legend name drawn (as the tables' MAX_CELL_CHARS): a 1 MiB name stays a line."""


def text(value: Any) -> str:
    """A trace string made safe for plotly's label markup (and so for the page), capped at MAX_LABEL_CHARS."""
    s = str(value)
    if len(s) > MAX_LABEL_CHARS:
        s = s[: MAX_LABEL_CHARS - 1] + "…"
    return escape_html(s)


def _layout(fig: go.Figure, title: str, height: int = HEIGHT_PX, **kw: Any) -> go.Figure:
    fig.update_layout(title={"text": text(title), "x": 0.01}, height=height, template="plotly_white",
                      margin={"l": 70, "r": 20, "t": 50, "b": 45}, **kw)
    return fig


def _ms(ns: float) -> float:
    return ns / 1e6


def _bin_x(b: dict[str, Any]) -> list[float]:
    """Bin centres in ms (the last bin may be cut short by the end of the range)."""
    return [_ms((b["t_start"] + i * b["bin_ns"] + min(b["t_end"], b["t_start"] + (i + 1) * b["bin_ns"])) / 2)
            for i in range(b["bins"])]


def _time_axis(b: dict[str, Any]) -> dict[str, Any]:
    """The x axis of the binned charts: exactly the range binned (the run, or the chosen window)."""
    return {"title": {"text": "time (ms)"}, "range": [_ms(b["t_start"]), _ms(b["t_end"])]}


def utilization(b: dict[str, Any]) -> go.Figure:
    """Heat map of busy share per PE (rows) and time bin (columns)."""
    fig = go.Figure(go.Heatmap(z=b["utilization"], x=_bin_x(b), y=[text(r) for r in b["row_labels"]], zmin=0, zmax=1,
                               colorscale="Viridis", colorbar={"title": {"text": "busy"}},
                               hovertemplate="PE %{y}<br>%{x:.3f} ms<br>busy %{z:.0%}<extra></extra>"))
    rows = len(b["row_labels"])
    return _layout(fig, "Utilization per PE over time", height=min(900, 160 + 12 * rows),
                   xaxis=_time_axis(b), yaxis={"title": {"text": "PE / rank"}, "autorange": "reversed",
                                               "type": "category"})


def profile(b: dict[str, Any]) -> go.Figure:
    """Projections' time profile: busy PE-equivalents per bin, stacked by entry or category."""
    x = _bin_x(b)
    fig = go.Figure()
    for key, ys in b["profile"].items():
        fig.add_trace(go.Bar(x=x, y=ys, name=text(key), hovertemplate="%{x:.3f} ms: %{y:.2f}<extra>%{fullData.name}</extra>"))
    fig.add_trace(go.Bar(x=x, y=b["idle_pe_equiv"], name="idle", marker_color="#dddddd"))
    what = "op category" if b["by"] == "category" else "entry method"
    return _layout(fig, f"Time profile: busy PEs per time bin, stacked by {what}", barmode="stack", bargap=0,
                   xaxis=_time_axis(b), yaxis={"title": {"text": "PE-equivalents"}, "range": [0, max(b["pes"], 1)]})


def usage(b: dict[str, Any]) -> go.Figure:
    """Projections' usage profile: per PE, the share of the run spent in each entry or category."""
    pes = [str(p) for p in range(len(next(iter(b["usage"].values()), [])))]
    fig = go.Figure()
    for key, shares in b["usage"].items():
        fig.add_trace(go.Bar(x=pes, y=shares, name=text(key), marker_color="#dddddd" if key == "idle" else None,
                             hovertemplate="PE %{x}: %{y:.1%}<extra>%{fullData.name}</extra>"))
    what = "op category" if b["by"] == "category" else "entry method"
    return _layout(fig, f"Usage profile: share of the {'window' if b.get('zoomed') else 'run'} per PE, by {what}",
                   barmode="stack", xaxis={"title": {"text": "PE / rank"}, "type": "category"},
                   yaxis={"tickformat": ".0%", "range": [0, 1]})


def _lane(pe: int, stream: int | None, tid: int | None, training: bool, kind: str = "exec") -> str:
    if kind in ("phase", "collective"):  # a rank's phases and collectives lie over its ops: lanes of their own
        return f"{'rank' if training else 'PE'} {pe} {kind}s"
    if not training:
        return f"PE {pe}"
    if stream is not None:
        return f"rank {pe} stream {stream}"
    return f"rank {pe} thread {tid if tid is not None else 0}"


def _lane_order(lane: str) -> list[tuple[int, int, str]]:
    """Lanes in numeric order of their PE, thread and stream (negative thread ids included)."""
    return [(0, int(x), "") if x.lstrip("-").isdigit() else (1, 0, x) for x in lane.split()]


def timeline(w: dict[str, Any], critical: list[tuple[int, int, int]], training: bool) -> tuple[go.Figure, int]:
    """Running intervals (executions, or their pieces where they suspended; phases and collectives)
    as bars per lane, clipped to the window, messages as lines between lanes, the critical path on
    top; the x axis is the window. Returns the figure and the number of lanes left out."""
    ex = w["execs"]
    lanes = [_lane(p, s, t, training, k) for p, s, t, k in zip(ex["pe"], ex["stream"], ex["tid"], ex["kind"])]
    order = sorted(set(lanes), key=_lane_order)
    kept = set(order[:MAX_LANES])
    by_name: dict[str, dict[str, list[Any]]] = {}
    for lane, t0, t1, name in zip(lanes, ex["t0"], ex["t1"], ex["name"]):
        if lane in kept:
            d = by_name.setdefault("(unnamed)" if name is None else str(name), {"y": [], "base": [], "x": []})
            d["y"].append(lane)
            d["base"].append(_ms(t0))
            d["x"].append(_ms(max(t1 - t0, 0)))
    fig = go.Figure()
    for name, d in sorted(by_name.items(), key=lambda kv: -sum(kv[1]["x"])):
        fig.add_trace(go.Bar(orientation="h", y=d["y"], base=d["base"], x=d["x"], name=text(name),
                             hovertemplate="%{y}<br>start %{base:.4f} ms<br>%{x:.4f} ms<extra>%{fullData.name}</extra>"))
    m = w["msgs"]
    mx: list[float | None] = []
    my: list[str | None] = []
    for sp, ts, dp, te in zip(m["src_pe"], m["t_send"], m["dst_pe"], m["t_exec"]):
        a, b = f"PE {sp}", f"PE {dp}"
        if a in kept and b in kept:
            mx += [_ms(ts), _ms(te), None]
            my += [a, b, None]
    if mx:
        fig.add_trace(go.Scatter(x=mx, y=my, mode="lines", name="messages", line={"width": 1, "color": "rgba(60,60,60,0.45)"},
                                 hoverinfo="skip"))
    cx: list[float | None] = []
    cy: list[str | None] = []
    for pe, t0, t1 in critical:
        if f"PE {pe}" in kept:
            cx += [_ms(t0), _ms(t1)]
            cy += [f"PE {pe}", f"PE {pe}"]
    if cx:
        fig.add_trace(go.Scatter(x=cx, y=cy, mode="lines+markers", name="critical path",
                                 line={"width": 3, "color": "crimson"}, marker={"size": 4}))
    title = f"Timeline of {w['how']} ({_ms(w['w1'] - w['w0']):.3f} ms)"
    fig = _layout(fig, title, height=min(1400, 140 + LANE_PX * max(len(kept), 1)), barmode="overlay",
                  xaxis={"title": {"text": "time (ms)"}, "range": [_ms(w["w0"]), _ms(w["w1"])]}, yaxis={"type": "category", "categoryorder": "array",
                                                  "categoryarray": order[:MAX_LANES], "autorange": "reversed"})
    return fig, max(0, len(order) - MAX_LANES)


def comm_matrix(rows: list[dict[str, Any]], pes: int) -> go.Figure:
    """Bytes sent from PE (row) to PE (column)."""
    g = max(1, -(-pes // MAX_MATRIX_PES))
    n = max(1, -(-pes // g))
    z = [[0] * n for _ in range(n)]
    for r in rows:
        if r.get("peer_pe") is not None and r["pe"] is not None and 0 <= r["pe"] < pes and 0 <= r["peer_pe"] < pes:
            z[r["pe"] // g][r["peer_pe"] // g] += r["bytes"] or 0
    labels = [str(i * g) if g == 1 else f"{i * g}-{min((i + 1) * g, pes) - 1}" for i in range(n)]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=labels, colorscale="Blues", colorbar={"title": {"text": "bytes"}},
                               hovertemplate="from PE %{y} to PE %{x}<br>%{z:,} bytes<extra></extra>"))
    return _layout(fig, "Communication matrix (bytes sent, from row PE to column PE)", height=min(800, 200 + 14 * n),
                   xaxis={"title": {"text": "to PE"}, "type": "category"},
                   yaxis={"title": {"text": "from PE"}, "type": "category", "autorange": "reversed"})


def pe_time(rows: list[dict[str, Any]]) -> go.Figure:
    """Busy, idle and other time per PE (the overview's per-PE table as stacked bars)."""
    pes = [str(r["pe"]) for r in rows]
    fig = go.Figure()
    for key, label, color in (("busy_ns", "busy", "#2a7ab9"), ("idle_ns", "idle", "#cccccc"), ("other_ns", "other", "#f0a35e")):
        fig.add_trace(go.Bar(x=pes, y=[_ms(r[key] or 0) for r in rows], name=label, marker_color=color))
    return _layout(fig, "Time per PE", barmode="stack", xaxis={"title": {"text": "PE / rank"}, "type": "category"},
                   yaxis_title="ms")


def before_after(labels: list[str], before: list[float], after: list[float], title: str,
                 names: tuple[str, str], unit: str = "ms") -> go.Figure:
    """Grouped bars of two runs (or now and predicted) per label."""
    fig = go.Figure([go.Bar(x=[text(x) for x in labels], y=before, name=text(names[0])),
                     go.Bar(x=[text(x) for x in labels], y=after, name=text(names[1]))])
    return _layout(fig, title, barmode="group", xaxis={"type": "category"}, yaxis_title=unit)


def step_breakdown(rows: list[dict[str, Any]]) -> go.Figure:
    """Mean step time per rank split into compute, communication (not overlapped), overlap and idle."""
    ranks = [str(r["pe"]) for r in rows]
    fig = go.Figure()
    for key, label in (("compute_ns", "compute"), ("comm_ns", "communication"), ("overlap_ns", "overlap"),
                       ("idle_ns", "idle")):
        steps = [max(r.get("steps") or 1, 1) for r in rows]
        fig.add_trace(go.Bar(x=ranks, y=[_ms((r.get(key) or 0) / s) for r, s in zip(rows, steps)], name=label))
    return _layout(fig, "Step breakdown per rank (mean per step)", barmode="stack",
                   xaxis={"title": {"text": "rank"}, "type": "category"}, yaxis_title="ms per step")


def collectives(rows: list[dict[str, Any]]) -> go.Figure:
    """Total time per collective name (all ranks)."""
    tot: dict[str, float] = {}
    for r in rows:
        tot[str(r.get("name"))] = tot.get(str(r.get("name")), 0.0) + _ms(r.get("dur_ns") or r.get("total_ns") or 0)
    names = sorted(tot, key=lambda k: -tot[k])[:20]
    fig = go.Figure(go.Bar(x=[text(n) for n in names], y=[tot[n] for n in names], name="time"))
    return _layout(fig, "Collectives: total time", xaxis={"type": "category"}, yaxis_title="ms")


def streams(rows: list[dict[str, Any]]) -> go.Figure:
    """Kernel time and gaps per (rank, stream)."""
    lanes = [f"rank {r['pe']} stream {r['stream']}" for r in rows]
    fig = go.Figure([go.Bar(x=lanes, y=[_ms(r.get("kernel_ns") or 0) for r in rows], name="kernels"),
                     go.Bar(x=lanes, y=[_ms(r.get("idle_ns") or 0) for r in rows], name="idle")])
    return _layout(fig, "Streams: kernel time and idle per rank and stream", barmode="stack",
                   xaxis={"type": "category"}, yaxis_title="ms")
