"""The exec DAG built from the shared event arrays (paradise.events.eventload), with no
Python per exec: the lean graph that communication's latency fit and scheduling's critical
path use on traces too large to replay.

Above REPLAY_MAX_EXECS executions no what-if replay runs, so the full replay graph
(scheduling_exec_graph: per-exec identity strings, object order, untraced causes) is not
needed; the critical path, the message waits and the latency fit use the lean graph.

Matching rules (those of scheduling_exec_graph.sql): a message's send is its earliest send
row; its sending exec is the sending object's latest exec on that PE started at or before the
send, when the send lies within its active time; else the latest exec on the sending PE that
started at or before the send and was still running then.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paradise.events.cache import cached, prefetch
from paradise.events.eventload import NULL, EventArrays, load, rows_where, take
from paradise.whatif.model import ExecSpan


def event_arrays(engine: object) -> EventArrays:
    """load(engine), once per engine. When the trace is too large to replay, the lean graph
    (which communication and scheduling need) starts building on the other core right away."""
    ea = cached(engine, "event_arrays", lambda: load(engine))
    if _too_large(ea):
        prefetch(engine, "lean_graph", lambda: build(engine))
    return ea


@dataclass
class LeanGraph(ExecSpan):
    """One row per exec, ordered by (pe, t0, t1); ids are positions. Field names follow
    paradise.whatif.model.ExecGraph where they mean the same, so fit_latency accepts it."""

    pe: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    cost: np.ndarray
    src: np.ndarray  # sending exec id or -1
    src_pe: np.ndarray  # PE of the send or -1
    send_t0: np.ndarray  # ns, -1 when no message
    nbytes: np.ndarray
    pe_prev: np.ndarray  # previous exec on the PE or -1
    gap: np.ndarray  # ns idle on the PE before this exec
    crit_pred: np.ndarray
    wait_msg: np.ndarray
    coll_code: np.ndarray  # index into coll_names, -1 for none
    name_code: np.ndarray  # index into entry_names, -1 for none
    coll_names: list[str]
    entry_names: list[str]


def _order(pe: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray | None:
    """The permutation sorting by (pe, t0, t1), or None when already sorted (the usual case:
    one file per PE, rows in time order)."""
    if len(pe) < 2:
        return None
    dp, d0, d1 = np.diff(pe), np.diff(t0), np.diff(t1)
    if bool(np.all((dp > 0) | ((dp == 0) & ((d0 > 0) | ((d0 == 0) & (d1 >= 0)))))):
        return None
    return np.lexsort((t1, t0, pe))


def _latest_before(grp: np.ndarray, t: np.ndarray, q_grp: np.ndarray, q_t: np.ndarray) -> np.ndarray:
    """For each query (group, time), the position of the latest row of that group with t <= time
    (rows sorted by (grp, t)), or -1. Packs (group, time) into one int64 key."""
    if len(grp) == 0 or len(q_grp) == 0:
        return np.full(len(q_grp), -1, np.int64)
    grp, q_grp = grp.astype(np.int64, copy=False), q_grp.astype(np.int64, copy=False)
    tmin = int(min(t.min(), q_t.min()))
    width = int(max(t.max(), q_t.max())) - tmin + 2
    if width * (int(max(grp.max(), q_grp.max())) + 2) >= 2**62:  # packed keys would overflow
        raise ValueError("trace spans too long a time to pack (group, t0) keys")
    k = np.searchsorted(grp * width + (t - tmin), q_grp * width + (q_t - tmin), side="right") - 1
    kk = np.maximum(k, 0)
    return np.where((k >= 0) & (grp[kk] == q_grp), kk, -1)


def _sending_exec(pe: np.ndarray, t0: np.ndarray, t1: np.ndarray, cost: np.ndarray, okey: np.ndarray,
                  s_pe: np.ndarray, s_t0: np.ndarray, s_okey: np.ndarray) -> np.ndarray:
    """For each send, its sending exec id (object rule, else PE rule; see the module doc), or -1."""
    import pandas as pd

    by_pe = _latest_before(pe, t0, s_pe, s_t0)  # execs are sorted by (pe, t0)
    by_pe = np.where((by_pe >= 0) & (s_t0 <= t1[np.maximum(by_pe, 0)]), by_pe, -1)
    # where the PE rule already found an exec of the sending object, the object rule agrees
    # (the latest exec on the PE is the object's latest); only the other sends need it
    bp = np.maximum(by_pe, 0)
    need = (s_okey >= 0) & ~((by_pe >= 0) & (okey[bp] == s_okey))
    if not need.any():
        return by_pe
    sub = np.flatnonzero((okey >= 0) & np.isin(okey, np.unique(s_okey[need])))
    if len(sub) == 0:
        return by_pe
    codes, uniq = pd.factorize(okey[sub])  # object -> dense code; groups are (pe, object)
    grp = pe[sub].astype(np.int64) * len(uniq) + codes
    s_code = pd.Index(uniq).get_indexer(s_okey)
    s_grp = np.where(need & (s_code >= 0), s_pe.astype(np.int64) * len(uniq) + s_code, -1)
    order = np.lexsort((t0[sub], grp))
    try:
        j = _latest_before(grp[order], t0[sub][order], s_grp, s_t0)
    except ValueError:  # too many (pe, object) groups to pack with the time: the PE rule alone
        return by_pe
    by_obj = np.where(j >= 0, sub[order[np.maximum(j, 0)]], -1)
    ok = (by_obj >= 0) & (s_t0 - t0[np.maximum(by_obj, 0)] <= cost[np.maximum(by_obj, 0)])
    return np.where(ok, by_obj, by_pe)


def build(engine: object) -> LeanGraph:
    """The lean exec graph (execs with an end) from the shared event arrays."""
    ea = event_arrays(engine)
    x, s = ea.execs, ea.sends
    ended = rows_where(x["t1"] != NULL)
    pe, t0, t1 = take(x["pe"], ended), take(x["t0"], ended), take(x["t1"], ended)
    order = _order(pe, t0, t1)
    if order is not None:
        ended = order if ended is None else ended[order]
        pe, t0, t1 = pe[order], t0[order], t1[order]
    cost = take(x["cost_ns"], ended)
    cost = np.maximum(np.where(cost == NULL, 0, cost), 0)
    okey = take(x["okey"], ended)
    okey = np.where(okey == NULL, -1, okey)
    n = len(pe)
    idx = np.int32 if n < 2**31 else np.int64  # exec ids: half the memory of int64
    first = np.ones(n, bool)  # first exec on its PE
    np.not_equal(pe[1:], pe[:-1], out=first[1:])
    pe_prev = np.arange(-1, n - 1, dtype=idx)
    pe_prev[first] = -1
    prev_end = np.empty(n, np.int64)  # active end of the previous exec on the PE, or -1
    if n:
        np.add(t0[:-1], cost[:-1], out=prev_end[1:])
    prev_end[first] = -1
    s_okey = np.where(s["okey"] == NULL, -1, s["okey"])
    u_src = _sending_exec(pe, t0, t1, cost, okey, s["pe"], s["t0"], s_okey)
    k = take(ea.x_send, ended)
    has = (take(x["msg"], ended) >= 0) & (k >= 0)
    kk = np.maximum(k, 0)
    nb = np.where(s["bytes"] == NULL, 0, s["bytes"])
    pick = (lambda a, fill: np.where(has, a[kk], fill)) if len(s["msg"]) else (lambda a, fill: np.full(n, fill))
    src, src_pe = pick(u_src, -1).astype(idx), pick(s["pe"], -1)
    del u_src
    send_t0, nbytes = pick(s["t0"], -1), pick(nb, 0)
    binding = (src >= 0) & (first | (send_t0 > prev_end))  # the message came after the PE was free
    crit_pred = np.where(binding & (src != np.arange(n, dtype=idx)), src, pe_prev)
    run_t0 = int(t0.min()) if n else 0
    wait_msg = np.where(binding, np.maximum(t0 - np.where(first, run_t0, prev_end), 0), 0)
    gap = np.where(first, 0, np.maximum(t0 - prev_end, 0))
    return LeanGraph(pe=pe, t0=t0, t1=t1, cost=cost, src=src, src_pe=src_pe, send_t0=send_t0, nbytes=nbytes,
                     pe_prev=pe_prev, gap=gap, crit_pred=crit_pred, wait_msg=wait_msg, coll_code=take(x["coll"], ended),
                     name_code=take(x["name"], ended), coll_names=ea.names, entry_names=ea.names)


def lean_graph(engine: object) -> LeanGraph:
    """build(engine), once per engine (communication's latency fit and scheduling share it)."""
    return cached(engine, "lean_graph", lambda: build(engine))


def exec_count(engine: object) -> int:
    """Executions with an end (the exec graph's size), from the shared event arrays."""
    return event_arrays(engine).ended


def reduction_targets(engine: object) -> bool:
    """Whether any exec (with coll and t1) could be the target of an inferred reduction (the
    candidate test of communication_reductions.sql): without one that query returns nothing."""
    return event_arrays(engine).reduce_targets


def _too_large(ea: EventArrays) -> bool:
    from paradise import whatif

    return ea.ended > whatif.REPLAY_MAX_EXECS


def too_large_to_replay(engine: object) -> bool:
    """Above REPLAY_MAX_EXECS no replay runs: the lean arrays replace the replay graph."""
    return _too_large(event_arrays(engine))


def replayer(engine: object, pes: int | None) -> object:
    """paradise.whatif.load_replayer, once per engine (communication and scheduling share it)."""
    from paradise.whatif import load_replayer

    return cached(engine, "replayer", lambda: load_replayer(engine, pes))


def latency_model(engine: object, pes: int | None) -> object:
    """The fitted message cost: from the lean arrays for traces too large to replay (not
    calibrated: calibration replays, skipped above CALIBRATE_MAX_EXECS anyway), else the replayer's."""
    from paradise.whatif.model import fit_latency

    if too_large_to_replay(engine):
        return cached(engine, "lean_model", lambda: fit_latency(lean_graph(engine)))  # type: ignore[arg-type]
    return replayer(engine, pes).model  # type: ignore[attr-defined]
