"""Event-driven replay of an exec DAG on PEs: the what-if simulator.

Each exec waits for (a) the message that caused it, which arrives `offset + latency` after its
sender starts, (b) the previous exec of its object (objects keep their order), and (c) for execs
with no traced cause, the exec (on any PE) whose end came last before it in the run, plus the gap
seen then (an untraced reduction, future or runtime message most likely came from there). No PE starts before its first exec in the trace (start-up).
A PE runs one exec at a time, picking the ready exec with the
best (priority, ready time, original start). O(n log n) in the number of execs: about 1e6 execs
replay in well under a minute; beyond ~5e6 memory (Python lists) is the limit.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from paradise.events.execgraph import LatencyModel
from paradise.whatif.model import ExecGraph


@dataclass(frozen=True)
class SimResult:
    """Simulated start and finish of every exec (ns from the run's start) and the makespan."""

    start: np.ndarray
    finish: np.ndarray
    pe: np.ndarray
    makespan_ns: int

    def pe_load(self, cost: np.ndarray, pes: int) -> list[int]:
        return np.bincount(self.pe, weights=cost, minlength=pes).astype(np.int64).tolist()


def _children(parent: np.ndarray, n: int) -> tuple[list[int], list[int]]:
    """CSR (offsets, children) of a parent array (-1 = none), children in id order."""
    has = parent >= 0
    kids = np.nonzero(has)[0]
    order = np.argsort(parent[kids], kind="stable")
    kids = kids[order]
    counts = np.bincount(parent[kids], minlength=n) if len(kids) else np.zeros(n, np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return offsets.tolist(), kids.tolist()


def simulate(g: ExecGraph, pe: np.ndarray, model: LatencyModel, prio: np.ndarray | None = None,
             pes: int | None = None, overhead_ns: np.ndarray | None = None) -> SimResult:
    """Replays the DAG with execs placed on `pe` (per exec) and ranked by `prio` (lower first).

    `overhead_ns` (per exec) replaces the model's scheduler cost after each exec, e.g. for
    messages that arrive combined, where one dispatch serves a whole batch."""
    n = g.n
    if n == 0:
        return SimResult(np.zeros(0, np.int64), np.zeros(0, np.int64), pe, 0)
    npes = int(max(pe.max() + 1, pes or 0))
    hold = g.hold
    pending = ((g.src >= 0).astype(np.int64) + (g.obj_prev >= 0) + (hold >= 0)).tolist()
    msg_off, msg_kids = _children(g.src, n)
    obj_off, obj_kids = _children(g.obj_prev, n)
    hold_off, hold_kids = _children(hold, n)
    same = pe[np.where(g.src >= 0, g.src, 0)] == pe
    lat = np.where(same, model.local_ns, model.a_ns + model.ns_per_byte * g.nbytes)
    arrive_after = (g.offset + lat).astype(np.int64).tolist()  # ns after the sender's start
    cost, gap, pe_l = g.cost.tolist(), g.hold_gap.tolist(), pe.tolist()
    prio_l = (prio if prio is not None else np.zeros(n, np.int64)).tolist()
    orig = (g.t0 - g.t0.min()).tolist()
    ovh = (overhead_ns.astype(np.int64).tolist() if overhead_ns is not None
           else [int(model.overhead_ns)] * n)
    start, finish = [0] * n, [0] * n
    ready: list[list[tuple[int, int, int, int]]] = [[] for _ in range(npes)]
    busy = [False] * npes
    # a PE runs nothing before its first exec in the trace (process start-up is not replayed)
    first = np.full(npes, np.iinfo(np.int64).max)
    np.minimum.at(first, g.pe, g.t0 - g.t0.min())
    free_at = np.where(first == np.iinfo(np.int64).max, 0, first).tolist()
    events: list[tuple[int, int, int]] = []  # (time, kind 0=release 1=finish, exec)
    for i in np.nonzero(np.asarray(pending) == 0)[0].tolist():
        events.append((orig[i], 0, i))
    heapq.heapify(events)
    push, pop = heapq.heappush, heapq.heappop

    def begin(i: int, t: int) -> None:
        p = pe_l[i]
        busy[p] = True
        start[i] = t
        finish[i] = t + cost[i]
        push(events, (finish[i], 1, i))
        for k in range(msg_off[i], msg_off[i + 1]):
            c = msg_kids[k]
            push(events, (t + arrive_after[c], 0, c))

    while events:
        t, kind, i = pop(events)
        if kind == 0:
            pending[i] -= 1
            if pending[i] > 0:
                continue
            p = pe_l[i]
            if busy[p]:
                push(ready[p], (prio_l[i], t, orig[i], i))
            else:
                begin(i, max(t, free_at[p]))
            continue
        p = pe_l[i]
        busy[p] = False
        free_at[p] = t + ovh[i]
        for k in range(obj_off[i], obj_off[i + 1]):
            push(events, (t, 0, obj_kids[k]))
        for k in range(hold_off[i], hold_off[i + 1]):
            c = hold_kids[k]
            push(events, (t + gap[c], 0, c))
        if ready[p]:
            begin(pop(ready[p])[3], free_at[p])
    s, f = np.asarray(start, np.int64), np.asarray(finish, np.int64)
    return SimResult(start=s, finish=f, pe=pe, makespan_ns=int(f.max() - min(s.min(), 0)))
