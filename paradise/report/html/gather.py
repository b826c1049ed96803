"""What the HTML report draws beyond the analyses' dicts: time bins, a timeline window, the
critical path in it. Stage 1 is SQL (report_*.sql), so the page's size follows the number of
bins and PEs, not the number of events; Python only reshapes those small results.
"""

from __future__ import annotations

from typing import Any

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
    """Per-PE utilization per bin (a PEs × bins matrix, capped at 1); the time profile: busy time
    per bin of the MAX_KEYS largest keys (PE-equivalents: busy ns / bin ns); the usage profile:
    each PE's time per key (and idle) as a share of the run."""
    bin_ns = max(1, -(-(t_end - t_start) // n_bins))
    nb = max(1, -(-(t_end - t_start) // bin_ns))
    t = engine.query("report_bins", t_start=t_start, bin_ns=bin_ns, by_cat=by_cat, n_bins=nb, other=OTHER,
                     keys=top_keys(engine, by_cat)).to_pydict()
    util = [[0.0] * nb for _ in range(max(pes, 1))]
    idle = [0.0] * nb
    per_key: dict[str, list[float]] = {}
    usage: dict[str, dict[int, float]] = {}  # key -> pe -> share of the run
    for level, pe, b, key, busy, idle_ns in zip(t["level"], t["pe"], t["bin"], t["key"], t["busy_ns"], t["idle_ns"]):
        if level == 2:
            name = "idle" if key is None else str(key)
            usage.setdefault(name, {})[pe] = (idle_ns if key is None else busy) / max(t_end - t_start, 1)
            continue
        if not 0 <= b < nb:
            continue
        if level == 0 and pe is not None and 0 <= pe < len(util):
            util[pe][b] = min(1.0, busy / bin_ns)
        elif level == 1:
            idle[b] += idle_ns / bin_ns
            if busy:
                per_key.setdefault("(unnamed)" if key is None else str(key), [0.0] * nb)[b] += busy / bin_ns
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
    return {"t_start": t_start, "bin_ns": bin_ns, "bins": nb, "utilization": rows, "row_labels": labels,
            "mean_utilization": mean, "profile": profile, "idle_pe_equiv": idle, "by": "category" if by_cat else "entry",
            "usage": {k: [v.get(p, 0.0) for p in range(len(util))] for k, v in usage_top.items()}}


def top_keys(engine: Any, by_cat: bool, n: int = MAX_KEYS) -> list[str]:
    """The n keys of most busy time (report_top_keys.sql): the only ones report_bins names."""
    t = engine.query("report_top_keys", by_cat=by_cat)
    if t.num_rows <= n:
        return [str(k) for k in t.column("key").to_pylist()]
    import pyarrow.compute as pc

    top = t.take(pc.select_k_unstable(t, k=n, sort_keys=[("busy_ns", "descending"), ("key", "ascending")]))
    return [str(k) for k in top.column("key").to_pylist()]


def mean_utilization(engine: Any, trace: Any, overview: dict[str, Any], n_bins: int) -> list[float]:
    """Mean busy share over all PEs per time bin (the terminal's sparkline)."""
    t_start, t_end, pes = span_of({"overview": overview})
    return bins(engine, t_start, t_end, pes, training_like(trace.source), n_bins)["mean_utilization"]


def window(engine: Any, t_start: int, t_end: int, choice: tuple[int, int] | None = None) -> dict[str, Any]:
    """The timeline's window: `choice`, else the longest step, else the whole run; cut at the
    MAX_TIMELINE_EXECS-th execution start. Its executions and the messages inside it."""
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
    cut = len(ex["t0"]) >= MAX_TIMELINE_EXECS
    if cut:
        w1 = max(w0 + 1, ex["t0"][-1])
        how += f", cut at its first {MAX_TIMELINE_EXECS:,} executions"
    msgs = engine.query("report_window_msgs", w0=w0, w1=w1, max_rows=MAX_TIMELINE_MSGS).to_pydict()
    return {"w0": w0, "w1": w1, "how": how, "execs": ex, "msgs": msgs}


def critical_segments(session: Any, w0: int, w1: int) -> list[tuple[int, int, int]]:
    """(pe, t0, t1) of the critical path's executions inside the window, first to last, from the
    run's Session (the path the scheduling analysis followed: no second event scan)."""
    path = session.get("critical_path")
    if not path.lo:
        return []
    rows = session.engine.sql(
        "WITH seg AS (SELECT unnest($lo::BIGINT[]) AS lo, unnest($hi::BIGINT[]) AS hi) "
        "SELECT g.pe, g.t0, g.t1 FROM exec_graph g JOIN seg ON g.id BETWEEN seg.lo AND seg.hi "
        "WHERE g.t1 >= $w0 AND g.t0 <= $w1 ORDER BY g.id",
        lo=list(path.lo), hi=list(path.hi), w0=w0, w1=w1).to_pydict()
    return list(zip(rows["pe"], rows["t0"], rows["t1"]))


def gather(session: Any, analyses: dict[str, dict[str, Any]],
           choice: tuple[int, int] | None = None) -> dict[str, Any]:
    """Every drawing's data: bins, the timeline window, the critical path inside it."""
    engine, trace = session.engine, session.trace
    t_start, t_end, pes = span_of(analyses)
    training = training_like(trace.source)
    out = {"bins": bins(engine, t_start, t_end, pes, training),
           "window": window(engine, t_start, t_end, choice), "training": training}
    w = out["window"]
    out["critical"] = critical_segments(session, w["w0"], w["w1"]) if "scheduling" in analyses else []
    return out
