"""What the HTML report draws beyond the analyses' dicts: time bins, a timeline window, the
critical path in it. Stage 1 is SQL (report_*.sql), so the page's size follows the number of
bins and PEs, not the number of events; Python only reshapes those small results.
"""

from __future__ import annotations

from typing import Any

from paradise.events import execgraph
from paradise.importers import training_like

N_BINS = 240
"""Time bins across the run: about one per 4 px of a 1000 px wide chart."""
MAX_KEYS = 12
"""Entry methods / categories stacked in the time profile; the rest add up as "other"."""
MAX_HEATMAP_ROWS = 256
"""Above this many PEs the utilization heat map averages consecutive PEs into this many rows."""
MAX_TIMELINE_EXECS = 3000
"""Executions drawn on the timeline: the window is cut at the 3000th start (a page of bars that
still pans smoothly in a browser)."""
MAX_TIMELINE_MSGS = 1500
"""Message lines drawn on the timeline."""
OTHER = "(other)"


def span_of(analyses: dict[str, dict[str, Any]]) -> tuple[int, int, int]:
    """(first time, last time, PEs) of the run, from the overview's per-PE rows."""
    rows = analyses.get("overview", {}).get("per_pe") or []
    starts = [r["t_first"] for r in rows if r.get("t_first") is not None]
    ends = [r["t_last"] for r in rows if r.get("t_last") is not None]
    pes = max((r["pe"] for r in rows), default=-1) + 1
    return (min(starts, default=0), max(ends, default=1), pes)


def bins(engine: Any, t_start: int, t_end: int, pes: int, by_cat: bool, n_bins: int = N_BINS) -> dict[str, Any]:
    """Per-PE busy share per bin (a PEs × bins matrix); the time profile: busy time per bin of the
    MAX_KEYS largest keys (PE-equivalents: busy ns / bin ns); the usage profile: each PE's time
    per key (and idle) as a share of [t_start, t_end). Running time (report_bins.sql) clipped to
    that range, so a PE is at most 100 % busy and a bin holds at most `pes` PE-equivalents."""
    t_end = max(t_end, t_start + 1)
    bin_ns = max(1, -(-(t_end - t_start) // n_bins))
    nb = max(1, -(-(t_end - t_start) // bin_ns))
    t = engine.query("report_bins", t_start=t_start, t_end=t_end, bin_ns=bin_ns, n_bins=nb, by_cat=by_cat,
                     other=OTHER, keys=top_keys(engine, t_start, t_end, by_cat)).to_pydict()
    util = [[0.0] * nb for _ in range(max(pes, 1))]
    idle = [0.0] * nb
    per_key: dict[str, list[float]] = {}
    usage: dict[str, dict[int, float]] = {}  # key -> pe -> share of [t_start, t_end)
    for level, pe, b, key, busy, idle_ns in zip(t["level"], t["pe"], t["bin"], t["key"], t["busy_ns"], t["idle_ns"]):
        if level == 2:
            name = "idle" if key is None else str(key)
            usage.setdefault(name, {})[pe] = (idle_ns if key is None else busy) / (t_end - t_start)
        elif level == 0 and pe is not None and 0 <= pe < len(util):
            util[pe][b] = busy / _width(b, t_start, t_end, bin_ns)
        elif level == 1 and key is None:
            idle[b] += idle_ns / _width(b, t_start, t_end, bin_ns)
        elif level == 1:
            per_key.setdefault(str(key), [0.0] * nb)[b] += busy / _width(b, t_start, t_end, bin_ns)
    ranked = sorted((k for k in per_key if k != OTHER), key=lambda k: -sum(per_key[k]))
    profile = {k: per_key[k] for k in ranked[:MAX_KEYS]}
    extra = ranked[MAX_KEYS:] + [k for k in per_key if k == OTHER]  # keys the SQL already summed as OTHER
    if extra:
        profile[OTHER] = [sum(per_key[k][b] for k in extra) for b in range(nb)]
    kept = ranked[:MAX_KEYS]
    usage_top = {k: usage.get(k, {}) for k in kept}
    rest = [k for k in usage if k not in kept and k != "idle"]
    if rest:
        usage_top[OTHER] = {p: sum(usage[k].get(p, 0.0) for k in rest) for p in range(len(util))}
    usage_top["idle"] = usage.get("idle", {})
    rows, labels = util, [str(p) for p in range(len(util))]
    if len(util) > MAX_HEATMAP_ROWS:
        g = -(-len(util) // MAX_HEATMAP_ROWS)
        rows = [[sum(col) / len(col) for col in zip(*util[i: i + g])] for i in range(0, len(util), g)]
        labels = [f"{i}-{min(i + g, len(util)) - 1}" for i in range(0, len(util), g)]
    mean = [sum(col) / len(util) for col in zip(*util)] if util else []
    return {"t_start": t_start, "t_end": t_end, "bin_ns": bin_ns, "bins": nb, "pes": len(util), "utilization": rows,
            "row_labels": labels, "mean_utilization": mean, "profile": profile, "idle_pe_equiv": idle,
            "by": "category" if by_cat else "entry", "has_running": bool(per_key),
            "usage": {k: [v.get(p, 0.0) for p in range(len(util))] for k, v in usage_top.items()}}


def top_keys(engine: Any, t_start: int, t_end: int, by_cat: bool, n: int = MAX_KEYS) -> list[str]:
    """The n keys of most running time in [t_start, t_end) (report_top_keys.sql): the only ones
    report_bins names."""
    t = engine.query("report_top_keys", t_start=t_start, t_end=t_end, by_cat=by_cat)
    if t.num_rows <= n:
        return [str(k) for k in t.column("key").to_pylist()]
    import pyarrow.compute as pc

    top = t.take(pc.select_k_unstable(t, k=n, sort_keys=[("busy_ns", "descending"), ("key", "ascending")]))
    return [str(k) for k in top.column("key").to_pylist()]


def _width(b: int, t_start: int, t_end: int, bin_ns: int) -> int:
    """Length of bin b inside [t_start, t_end) (the last bin may be cut short by the end)."""
    return max(1, min(t_end, t_start + (b + 1) * bin_ns) - (t_start + b * bin_ns))


def mean_utilization(engine: Any, trace: Any, overview: dict[str, Any], n_bins: int) -> list[float]:
    """Mean busy share over all PEs per time bin (the terminal's sparkline)."""
    t_start, t_end, pes = span_of({"overview": overview})
    return bins(engine, t_start, t_end, pes, training_like(trace.source), n_bins)["mean_utilization"]


def window(engine: Any, t_start: int, t_end: int, choice: tuple[int, int] | None = None) -> dict[str, Any]:
    """The timeline's window: `choice`, else the longest step, else the whole run; cut at the
    MAX_TIMELINE_EXECS-th start. Its running intervals (clipped to it) and the messages inside it."""
    how = "chosen"
    if choice is None:
        steps = engine.query("report_steps").to_pydict()
        spans = [(t1 - t0, s, t0, t1) for s, t0, t1 in zip(steps["step"], steps["t0"], steps["t1"])]
        if spans:
            _, s, w0, w1 = max(spans)
            how = f"step {s}, the longest"
        else:
            w0, w1, how = t_start, t_end, "the whole run"
    else:
        w0, w1 = choice
    ex = engine.query("report_window_execs", w0=w0, w1=w1, max_rows=MAX_TIMELINE_EXECS).to_pydict()
    if len(ex["start"]) >= MAX_TIMELINE_EXECS:
        w1 = max(w0 + 1, ex["start"][-1])
        how += f", cut at its first {MAX_TIMELINE_EXECS:,} executions"
        keep = [i for i, t0 in enumerate(ex["t0"]) if t0 < w1]
        ex = {k: [v[i] for i in keep] for k, v in ex.items()}
        ex["t1"] = [min(t1, w1) for t1 in ex["t1"]]
    msgs = engine.query("report_window_msgs", w0=w0, w1=w1, max_rows=MAX_TIMELINE_MSGS).to_pydict()
    return {"w0": w0, "w1": w1, "how": how, "execs": ex, "msgs": msgs}


def critical_segments(session: Any, w0: int, w1: int) -> list[tuple[int, int, int]]:
    """(pe, t0, t1) of the critical path's executions inside the window, first to last, clipped to
    it, as they ran (an execution that suspended: its pieces), from the run's Session (the path the
    scheduling analysis followed: no second event scan)."""
    path = session.get("critical_path")
    if not path.lo:
        return []
    execgraph.view(session.engine, session.get("exec_graph"))  # the query reads the whole graph
    rows = session.engine.query("report_critical_segments", lo=list(path.lo), hi=list(path.hi),
                                w0=w0, w1=w1).to_pydict()
    return list(zip(rows["pe"], rows["t0"], rows["t1"]))


def gather(session: Any, analyses: dict[str, dict[str, Any]],
           choice: tuple[int, int] | None = None) -> dict[str, Any]:
    """Every drawing's data: bins, the timeline window, the critical path inside it."""
    engine, trace = session.engine, session.trace
    t_start, t_end, pes = span_of(analyses)
    training = training_like(trace.source)
    b0, b1 = choice if choice is not None else (t_start, t_end)  # a chosen window zooms every drawing
    out = {"bins": bins(engine, b0, b1, pes, training), "window": window(engine, t_start, t_end, choice),
           "training": training, "zoomed": choice is not None}
    out["bins"]["zoomed"] = choice is not None
    w = out["window"]
    out["critical"] = critical_segments(session, w["w0"], w["w1"]) if "scheduling" in analyses else []
    return out
