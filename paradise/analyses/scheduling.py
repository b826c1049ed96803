"""Scheduling: the critical path through executions and messages, idle time waiting for
messages, the entry methods on the critical path; schedule.json (message priorities).

Stage 1: scheduling_exec_graph gives each exec its binding predecessor (the sender when its
message arrived after the PE was free, else the previous exec on the PE) with SQL windows and
an ASOF join. Stage 2 walks those pointers back from the last exec to finish: the realized
critical path. The walk is O(path length) over numpy arrays (1e6 execs: about a second).
Traces above REPLAY_MAX_EXECS (no replay, so no priority hint) use the lean integer arrays of
paradise.events.execarrays instead (scheduling_events, scheduling_names):
same pointers, seconds and hundreds of MB instead of a minute and gigabytes on 10 million rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hints.generators import schedule as schedule_gen
from paradise import whatif
from paradise.analyses.base import (
    AnalysisConfig,
    AnalysisResult,
    Characteristic,
    Evidence,
    fmt_s,
    justification,
    provenance_of,
)
from paradise.events import execarrays
from paradise.format import TRAINING_SOURCES

WAIT_SHARE_NOTABLE = 0.1
"""Idle time waiting for messages above this share of PE time is reported as significant."""
PRIO_MIN_GAIN = 0.005
"""A schedule hint is written only when the replay with priorities is at least 0.5 % shorter."""


def applies(trace: Any) -> bool:
    return trace.source not in TRAINING_SOURCES


def critical_path(g: Any) -> np.ndarray:
    """Exec ids on the critical path, first to last: back from the last exec to end."""
    if g.n == 0:
        return np.zeros(0, np.int64)
    pred = g.crit_pred.tolist()
    cur = int(np.argmax(g.t0 + g.cost))  # active end: a suspended coroutine's wall end is no work
    path, seen = [cur], {cur}
    while pred[cur] >= 0 and pred[cur] not in seen:  # walks the path, not the events
        cur = pred[cur]
        seen.add(cur)
        path.append(cur)
    return np.asarray(path[::-1], np.int64)


def entry_codes(g: Any) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Per exec, integer codes of its collection and entry method (-1 for none), and their names."""
    if hasattr(g, "coll_code"):
        return g.coll_code, g.name_code, g.coll_names, g.entry_names
    cc, cu = pd.factorize(pd.Series(g.coll, dtype=object))
    nc, nu = pd.factorize(pd.Series(g.name, dtype=object))
    return (np.asarray(cc, np.int64), np.asarray(nc, np.int64), [str(x) for x in cu], [str(x) for x in nu])


def _labels(codes: np.ndarray, names: list[str], none: str) -> list[str]:
    return [names[c] if c >= 0 else none for c in codes.tolist()]


def path_entries(g: Any, path: np.ndarray, model: Any) -> pd.DataFrame:
    """Per (coll, entry) on the path: compute time, and queue delay (its message had arrived but
    the PE ran something else first). Queue delay is what a message priority can remove."""
    src = g.src[path]
    has = src >= 0
    same = np.where(has, g.pe[np.where(has, src, 0)] == g.pe[path], True)
    lat = np.where(same, model.local_ns, model.a_ns + model.ns_per_byte * g.nbytes[path])
    queued = np.where(has, np.maximum(g.t0[path] - (g.send_t0[path] + lat), 0), 0)
    # waiting behind execs of the same entry method is not something a priority on it can fix
    cc, nc, coll_names, entry_names = entry_codes(g)
    prev = g.pe_prev[path]
    pp = np.maximum(prev, 0)
    other = (prev < 0) | (nc[pp] != nc[path]) | (cc[pp] != cc[path])
    queued = np.where(other, queued, 0)
    df = pd.DataFrame({"coll": _labels(cc[path], coll_names, ""), "entry": _labels(nc[path], entry_names, "None"),
                       "cost_ns": g.cost[path], "queue_ns": queued.astype(np.int64)})
    agg = df.groupby(["coll", "entry"], sort=True).agg(
        cost_ns=("cost_ns", "sum"), queue_ns=("queue_ns", "sum"), execs=("cost_ns", "size"))
    agg["share"] = agg["cost_ns"] / max(float(agg["cost_ns"].sum()), 1.0)
    agg["queue_share"] = agg["queue_ns"] / max(float(agg["queue_ns"].sum()), 1.0)
    return agg.reset_index().sort_values(["share", "coll", "entry"], ascending=[False, True, True])


def path_char(g: Any, path: np.ndarray, entries: pd.DataFrame) -> Characteristic:
    span = int(g.t1[path[-1]] - g.t0[path[0]]) if len(path) else 0
    compute = int(g.cost[path].sum()) if len(path) else 0
    msgs = int((g.src[path[1:]] == path[:-1]).sum()) if len(path) else 0
    top = entries.head(5)
    names = [f"{c}.{e}" if c else str(e) for c, e in zip(top["coll"], top["entry"])]
    return Characteristic(
        "scheduling", "critical_path", span,
        (Evidence("length_ns", span, "ns"), Evidence("makespan_ns", g.makespan_ns, "ns"),
         Evidence("execs", len(path)), Evidence("compute_ns", compute, "ns"),
         Evidence("message_hops", msgs), Evidence("compute_share", round(compute / span, 4) if span else 0.0),
         Evidence("entries", [{"entry": n, "share": round(float(s), 4), "execs": int(k)}
                              for n, s, k in zip(names, top["share"], top["execs"])], "", None,
                  "scheduling_exec_graph")),
        confidence=0.9 if len(path) > 1 else 0.3,
        summary=(f"The critical path has {len(path)} executions and {msgs} message hops; "
                 f"{compute / span if span else 0:.0%} of it is computation"
                 + (f", mostly in {names[0]}." if names else ".")))


def waiting_char(g: Any, pes: int) -> Characteristic:
    per_pe = np.bincount(g.pe, weights=g.wait_msg, minlength=pes)
    span = max(g.makespan_ns, 1)
    share = float(per_pe.sum() / (span * pes))
    cc, nc, coll_names, entry_names = entry_codes(g)
    w = g.wait_msg > 0
    sums = pd.DataFrame({"c": cc[w], "n": nc[w], "w": g.wait_msg[w]}).groupby(["c", "n"])["w"].sum()
    labels = [f"{coll_names[c]}.{entry_names[n] if n >= 0 else None}" if c >= 0 and coll_names[c]
              else (entry_names[n] if n >= 0 else "None") for c, n in sums.index]
    top = pd.Series(sums.to_numpy(), index=labels).groupby(level=0).sum().sort_values(ascending=False).head(5)
    return Characteristic(
        "scheduling", "idle_waiting_for_messages", round(share, 4),
        (Evidence("wait_ns", int(per_pe.sum()), "ns"), Evidence("share_of_pe_time", round(share, 4), "",
                                                              WAIT_SHARE_NOTABLE, "scheduling_exec_graph"),
         Evidence("per_pe_wait_ns", [int(x) for x in per_pe], "ns"),
         Evidence("waited_for", [{"entry": k, "wait_ns": int(v)} for k, v in top.items()])),
        confidence=0.8 if g.n > 10 else 0.3,
        summary=(f"PEs spent {share:.0%} of their time idle waiting for messages"
                 + (f", most before {top.index[0]}." if len(top) else ".")))


def schedule_hint(engine: Any, trace: Any, rp: Any, entries: pd.DataFrame,
                  why: Characteristic) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Priorities for queued critical entries: each alone and all together are replayed, and the
    best is written when it beats the replay without priorities by PRIO_MIN_GAIN."""
    from hints.format import make_hint

    crit = [{"coll": c, "entry": e, "share": float(s)} for c, e, s in
            zip(entries["coll"], entries["entry"], entries["queue_share"]) if s > 0]
    prios = schedule_gen.priorities(crit)
    if not prios or rp is None:
        return None, {}
    options = [[p] for p in prios] + ([prios] if len(prios) > 1 else [])
    tried = []
    for opt in options:
        ranked = schedule_gen.priorities([{"coll": p["coll"], "entry": p["entry"], "share": p["critical_share"]}
                                          for p in opt])
        pred = rp.replay(None, schedule_gen.as_lookup(ranked))
        tried.append((pred["replay_makespan_ns"], len(ranked), ranked, pred))
    best_ns, _, best, pred = min(tried, key=lambda t: (t[0], t[1]))
    info = {"priorities": best, "replay_makespan_ns": best_ns,
            "baseline_replay_makespan_ns": pred["baseline_replay_makespan_ns"],
            "tried": [{"entries": [p["entry"] for p in r], "replay_makespan_ns": ns} for ns, _, r, _ in tried]}
    if best_ns > pred["baseline_replay_makespan_ns"] * (1 - PRIO_MIN_GAIN):
        return None, info  # priorities would not help (replay): no hint
    gain = {"makespan_ns_before": pred["measured_makespan_ns"],
            "makespan_ns_after": pred["predicted_makespan_ns"], "speedup": pred["predicted_speedup"]}
    doc = make_hint("schedule", {"priorities": best, "default_prio": 0}, provenance=provenance_of(trace),
                    justified_by=[justification(why)], predicted_gain=gain)
    return doc, info


def analyze(engine: Any, trace: Any, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Critical path, waiting time and the schedule hint (priorities for entries queued on the path)."""
    pes = trace.metadata.get("pes")
    if execarrays.too_large_to_replay(engine):  # no replay at this size: the lean arrays suffice
        rp, g = None, execarrays.lean_graph(engine)
        model, npes = execarrays.latency_model(engine, pes), int(max(pes or 0, (g.pe.max() + 1) if g.n else 1))
    else:
        rp = execarrays.replayer(engine, pes)
        g, model, npes = rp.graph, rp.model, rp.pes
    result = AnalysisResult("scheduling")
    if g.n == 0:
        return result
    path = critical_path(g)
    entries = path_entries(g, path, model)
    cp = path_char(g, path, entries)
    result.characteristics = [cp, waiting_char(g, npes)]
    result.sections["critical_entries"] = [
        {"coll": c, "entry": e, "cost_ns": int(n), "execs": int(k), "share": round(float(s), 4),
         "queue_ns": int(q), "queue_share": round(float(qs), 4)}
        for c, e, n, k, s, q, qs in zip(entries["coll"], entries["entry"], entries["cost_ns"], entries["execs"],
                                        entries["share"], entries["queue_ns"], entries["queue_share"])][:10]
    result.sections["latency_model"] = model.to_dict()
    doc, info = schedule_hint(engine, trace, rp if rp is not None and g.n <= whatif.REPLAY_MAX_EXECS else None, entries, cp)
    if info:
        result.sections["priority_replay"] = info
    if doc is not None:
        result.hints.append(doc)
        names = ", ".join(f"{p['coll']}.{p['entry']}" if p["coll"] else p["entry"] for p in info["priorities"])
        g = doc["predicted_gain"]
        result.sections["hint_explanations"] = [
            f"schedule.json: deliver messages for {names} first (higher priority): they hold "
            f"{sum(p['critical_share'] for p in info['priorities']):.0%} of the time the critical path's messages "
            f"waited in a PE's queue, and "
            f"the what-if replay predicts {fmt_s(g['makespan_ns_before'])} -> {fmt_s(g['makespan_ns_after'])}."]
    return result
