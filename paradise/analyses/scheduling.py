"""Scheduling: the critical path through executions and messages, idle time waiting for
messages, the entry methods on the critical path; schedule.json (message priorities).

Stage 1 is the event layer's exec graph (paradise.events.execgraph): each exec's binding
predecessor (the sender when its message arrived after the PE was free, else the previous exec
on the PE). paradise.events.critpath follows it back from the exec that ends last, fetching only
the execs where the path may change PE, and SQL sums the path per entry method. Stage 2 (here)
ranks those entries; the what-if replay (traces up to REPLAY_MAX_EXECS) judges priorities.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from hints.generators import schedule as schedule_gen
from paradise.analyses.base import (
    AnalysisConfig,
    AnalysisResult,
    Characteristic,
    Evidence,
    fmt_s,
    justification,
    provenance_of,
)
from paradise.analyses.session import Session
from paradise.events import critpath, graphread
from paradise.events.critpath import CriticalPath
from paradise.importers import training_like
from paradise.units import count

WAIT_SHARE_NOTABLE = 0.1
"""Idle time waiting for messages above this share of PE time is reported as significant."""
PRIO_MIN_GAIN = 0.005
"""A schedule hint is written only when the replay with priorities is at least 0.5 % shorter."""


def applies(session: Session) -> bool:
    return not training_like(session.trace.source)


NEEDS = frozenset({"exec_graph", "critical_path", "latency_model", "replayer", "not_replayed", "pe_time"})
"""Shared results scheduling reads (paradise.analyses.session.SHARED); the replayer only when
the trace is small enough to replay."""


def path_entries(engine: Any, info: Any, path: CriticalPath, model: Any) -> pd.DataFrame:
    """Per (coll, entry) on the path: compute time, and queue delay (its message had arrived but
    the PE ran an exec of another entry method first): what a message priority can remove."""
    agg = critpath.path_entries(engine, info, path, model).to_pandas()
    agg["share"] = agg["cost_ns"] / max(float(agg["cost_ns"].sum()), 1.0)
    agg["queue_share"] = agg["queue_ns"] / max(float(agg["queue_ns"].sum()), 1.0)
    return agg.sort_values(["share", "coll", "entry"], ascending=[False, True, True]).reset_index(drop=True)


def path_char(info: Any, path: CriticalPath, entries: pd.DataFrame) -> Characteristic:
    span = path.length_ns
    compute = int(entries["cost_ns"].sum())
    execs = path.execs
    msgs = path.message_hops + int(entries["local_hops"].sum())
    top = entries.head(5)
    names = [f"{c}.{e}" if c else str(e) for c, e in zip(top["coll"], top["entry"])]
    return Characteristic(
        "scheduling", "critical_path", span,
        (Evidence("length_ns", span, "ns"), Evidence("makespan_ns", info.makespan_ns, "ns"),
         Evidence("execs", execs), Evidence("compute_ns", compute, "ns"),
         Evidence("message_hops", msgs), Evidence("compute_share", round(compute / span, 4) if span else 0.0),
         Evidence("entries", [{"entry": n, "share": round(float(s), 4), "execs": int(k)}
                              for n, s, k in zip(names, top["share"], top["execs"])], "", None,
                  "scheduling_exec_graph")),
        confidence=0.9 if execs > 1 else 0.3,
        summary=(f"The critical path has {count(execs)} executions and {count(msgs)} message hops; "
                 f"{compute / span if span else 0:.0%} of it is computation"
                 + (f", mostly in {names[0]}." if names else ".")))


def _wait_label(coll: Any, entry: Any) -> str:
    if coll is not None and coll == coll and coll:
        return f"{coll}.{entry if entry is not None and entry == entry else None}"
    return str(entry) if entry is not None and entry == entry else "None"


def _not_busy(pe_time: Any, size: int) -> tuple[np.ndarray, float]:
    """Per PE (0..size-1) its time not running anything (span - busy, overview_pe_time), and the
    PEs' total span: what waits are measured against in the one accounting of PE time."""
    free = np.zeros(size)
    pe = np.asarray(pe_time.column("pe").to_numpy(), np.int64)
    span = np.asarray(pe_time.column("span_ns").to_numpy(), np.float64)
    busy = np.asarray(pe_time.column("busy_ns").to_numpy(), np.float64)
    keep = (pe >= 0) & (pe < size)
    free[pe[keep]] = (span - busy)[keep]
    return free, float(span.sum())


def waiting_char(engine: Any, info: Any, pes: int, pe_time: Any) -> Characteristic:
    """Idle time waiting for messages, as a share of the PEs' time. Per PE it is at most the PE's
    time not busy in the one accounting of PE time: the exec graph's gaps (from an execution's
    active end to the next start) can hold running time, e.g. a coroutine's later pieces."""
    w = graphread.merged(engine, info.parts, "events_waits").to_pandas()
    size = max(pes, int(w["pe"].max()) + 1 if len(w) else 0)
    pe_of = w["pe"].to_numpy(np.int64)
    raw = np.bincount(pe_of, weights=w["wait_ns"].to_numpy(np.float64), minlength=size)
    free, span = _not_busy(pe_time, size)
    per_pe = np.minimum(raw, free)
    share = float(per_pe.sum() / max(span, 1.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(raw > 0, per_pe / raw, 0.0)
    w["wait_ns"] = w["wait_ns"].to_numpy(np.float64) * scale[pe_of]  # entries scaled as their PE's total
    labels = [_wait_label(c, e) for c, e in zip(w["coll"], w["entry"])]
    top = pd.Series(w["wait_ns"].to_numpy(np.int64), index=labels).groupby(level=0).sum()
    top = top.sort_values(ascending=False).head(5)
    return Characteristic(
        "scheduling", "idle_waiting_for_messages", round(share, 4),
        (Evidence("wait_ns", int(per_pe.sum()), "ns"), Evidence("share_of_pe_time", round(share, 4), "",
                                                              WAIT_SHARE_NOTABLE, "scheduling_exec_graph"),
         Evidence("per_pe_wait_ns", [int(x) for x in per_pe], "ns"),
         Evidence("waited_for", [{"entry": k, "wait_ns": int(v)} for k, v in top.items()])),
        confidence=0.8 if info.n > 10 else 0.3,
        summary=(f"PEs spent {share:.0%} of their time idle waiting for messages"
                 + (f", most before {top.index[0]}." if len(top) else ".")))


def schedule_hint(trace: Any, rp: Any, entries: pd.DataFrame, why: Characteristic,
                  unjudged: str | None = None) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Priorities for queued critical entries: each alone and all together are replayed, and the
    best is written when it beats the replay without priorities by PRIO_MIN_GAIN; without a
    replayer (`unjudged` says why) none is written."""
    from hints.format import make_hint

    crit = [{"coll": c, "entry": e, "share": float(s)} for c, e, s in
            zip(entries["coll"], entries["entry"], entries["queue_share"]) if s > 0]
    prios = schedule_gen.priorities(crit)
    if not prios:
        return None, {}
    if rp is None:  # entries to rank, but no replay to judge them: no hint, and the JSON says why
        return None, {"priorities": prios, "not_replayed": unjudged}
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


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Critical path, waiting time and the schedule hint (priorities for entries queued on the path)."""
    info = session.get("exec_graph")
    result = AnalysisResult("scheduling")
    if info.n == 0:
        return result
    rp = session.get("replayer")  # None for a trace too large to replay: no priority hint
    model = session.get("latency_model")
    entries = path_entries(session.engine, info, session.get("critical_path"), model)
    cp = path_char(info, session.get("critical_path"), entries)
    result.characteristics = [cp, waiting_char(session.engine, info, info.pes(session.pes), session.get("pe_time"))]
    result.sections["critical_entries"] = [
        {"coll": c, "entry": e, "cost_ns": int(n), "execs": int(k), "share": round(float(s), 4),
         "queue_ns": int(q), "queue_share": round(float(qs), 4)}
        for c, e, n, k, s, q, qs in zip(entries["coll"], entries["entry"], entries["cost_ns"], entries["execs"],
                                        entries["share"], entries["queue_ns"], entries["queue_share"])][:10]
    result.sections["latency_model"] = model.to_dict()
    doc, hint_info = schedule_hint(session.trace, rp, entries, cp, session.get("not_replayed"))
    if hint_info:
        result.sections["priority_replay"] = hint_info
    if doc is not None:
        result.hints.append(doc)
        names = ", ".join(f"{p['coll']}.{p['entry']}" if p["coll"] else p["entry"] for p in hint_info["priorities"])
        g = doc["predicted_gain"]
        result.sections["hint_explanations"] = [
            f"schedule.json: deliver messages for {names} first (higher priority): they hold "
            f"{sum(p['critical_share'] for p in hint_info['priorities']):.0%} of the time the critical path's "
            f"messages waited in a PE's queue, and "
            f"the what-if replay predicts {fmt_s(g['makespan_ns_before'])} -> {fmt_s(g['makespan_ns_after'])}. "
            "Advice for runtimes with message priorities (Charm++ C++); charm4py has none, so it is "
            "written only with --hints-out DIR --advisory."]
    return result
