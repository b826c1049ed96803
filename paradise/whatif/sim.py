"""Event-driven replay of an exec DAG on PEs: the what-if simulator.

Each exec waits for (a) the message that caused it, which arrives `offset + latency` after its
sender starts, (b) the previous exec of its object (objects keep their order), and (c) for execs
with no traced cause, the exec (on any PE) whose end came last before it in the run, plus the gap
seen then (an untraced reduction, future or runtime message most likely came from there). No PE starts before its first exec in the trace (start-up).
A PE runs one exec at a time, picking the ready exec with the
best (priority, ready time, original start). O(n log n) in the number of execs. The arrays are
prepared here with numpy; the event loop is compiled (_replay.c; tests/oracles/replay.py is the
same loop in Python, its oracle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from paradise.events.execgraph import LatencyModel
from paradise.whatif import _replay
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


def _children(parent: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR (offsets, children) of a parent array (-1 = none), children in id order."""
    kids = np.nonzero(parent >= 0)[0]
    kids = kids[np.argsort(parent[kids], kind="stable")].astype(np.int64)
    counts = np.bincount(parent[kids], minlength=n) if len(kids) else np.zeros(n, np.int64)
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), kids


@dataclass(frozen=True)
class ReplayArrays:
    """The event loop's inputs, one int64 array per field (per exec unless said): execs still
    waiting for how many causes; the CSR children by message, by object order and by untraced
    cause; a message's arrival after its sender's start; cost; the gap after an untraced cause;
    PE; priority; original start; scheduler cost after the exec; and per PE the earliest start."""

    pending: np.ndarray
    msg_off: np.ndarray
    msg_kids: np.ndarray
    obj_off: np.ndarray
    obj_kids: np.ndarray
    hold_off: np.ndarray
    hold_kids: np.ndarray
    arrive_after: np.ndarray
    cost: np.ndarray
    gap: np.ndarray
    pe: np.ndarray
    prio: np.ndarray
    orig: np.ndarray
    ovh: np.ndarray
    free_at: np.ndarray


def replay_arrays(g: ExecGraph, pe: np.ndarray, model: LatencyModel, prio: np.ndarray | None = None,
                  pes: int | None = None, overhead_ns: np.ndarray | None = None) -> ReplayArrays:
    """The loop's inputs for replaying `g` with execs on `pe`, ranked by `prio` (simulate)."""
    n = g.n
    npes = int(max(pe.max() + 1, pes or 0))
    i64 = np.int64
    pending = ((g.src >= 0).astype(i64) + (g.obj_prev >= 0) + (g.hold >= 0)).astype(i64)
    msg_off, msg_kids = _children(g.src, n)
    obj_off, obj_kids = _children(g.obj_prev, n)
    hold_off, hold_kids = _children(g.hold, n)
    same = pe[np.where(g.src >= 0, g.src, 0)] == pe
    lat = np.where(same, model.local_ns, model.a_ns + model.ns_per_byte * g.nbytes)
    orig = (g.t0 - g.t0.min()).astype(i64)
    # a PE runs nothing before its first exec in the trace (process start-up is not replayed)
    first = np.full(npes, np.iinfo(i64).max)
    np.minimum.at(first, g.pe, orig)
    fields = dict(
        pending=pending, msg_off=msg_off, msg_kids=msg_kids, obj_off=obj_off, obj_kids=obj_kids,
        hold_off=hold_off, hold_kids=hold_kids,
        arrive_after=g.offset + lat,  # ns after the sender's start
        cost=g.cost, gap=g.hold_gap, pe=pe, prio=np.zeros(n, i64) if prio is None else prio, orig=orig,
        ovh=np.full(n, int(model.overhead_ns), i64) if overhead_ns is None else overhead_ns,
        free_at=np.where(first == np.iinfo(i64).max, 0, first))
    # the compiled loop reads plain int64 buffers, whatever the caller passed (a strided pe or prio)
    return ReplayArrays(**{k: np.ascontiguousarray(v, i64) for k, v in fields.items()})


def simulate(g: ExecGraph, pe: np.ndarray, model: LatencyModel, prio: np.ndarray | None = None,
             pes: int | None = None, overhead_ns: np.ndarray | None = None) -> SimResult:
    """Replays the DAG with execs placed on `pe` (per exec) and ranked by `prio` (lower first).

    `overhead_ns` (per exec) replaces the model's scheduler cost after each exec, e.g. for
    messages that arrive combined, where one dispatch serves a whole batch."""
    if g.n == 0:
        return SimResult(np.zeros(0, np.int64), np.zeros(0, np.int64), pe, 0)
    a = replay_arrays(g, pe, model, prio, pes, overhead_ns)
    start, finish = np.zeros(g.n, np.int64), np.zeros(g.n, np.int64)
    pending, free_at = a.pending.copy(), a.free_at.copy()  # the loop works on these in place
    _replay.replay(len(free_at), pending, a.msg_off, a.msg_kids, a.obj_off, a.obj_kids, a.hold_off, a.hold_kids,
                   a.arrive_after, a.cost, a.gap, a.pe, a.prio, a.orig, a.ovh, free_at, start, finish)
    return SimResult(start=start, finish=finish, pe=pe, makespan_ns=int(finish.max() - min(start.min(), 0)))
