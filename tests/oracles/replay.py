"""The what-if replay's event loop in Python (heapq), the oracle of the compiled one
(paradise/whatif/_replay.c): same inputs (paradise.whatif.sim.replay_arrays), same pop order."""

from __future__ import annotations

import heapq

import numpy as np

from paradise.whatif.sim import ReplayArrays


def replay_python(a: ReplayArrays) -> tuple[np.ndarray, np.ndarray]:
    """Start and finish of every exec, as the compiled loop computes them."""
    n, npes = len(a.pending), len(a.free_at)
    pending = a.pending.tolist()
    msg_off, msg_kids = a.msg_off.tolist(), a.msg_kids.tolist()
    obj_off, obj_kids = a.obj_off.tolist(), a.obj_kids.tolist()
    hold_off, hold_kids = a.hold_off.tolist(), a.hold_kids.tolist()
    arrive_after, cost, gap, pe_l = a.arrive_after.tolist(), a.cost.tolist(), a.gap.tolist(), a.pe.tolist()
    prio_l, orig, ovh, free_at = a.prio.tolist(), a.orig.tolist(), a.ovh.tolist(), a.free_at.tolist()
    start, finish = [0] * n, [0] * n
    ready: list[list[tuple[int, int, int, int]]] = [[] for _ in range(npes)]
    busy = [False] * npes
    events = [(orig[i], 0, i) for i in range(n) if pending[i] == 0]  # (time, 0 release / 1 finish, exec)
    heapq.heapify(events)
    push, pop = heapq.heappush, heapq.heappop

    def begin(i: int, t: int) -> None:
        busy[pe_l[i]] = True
        start[i] = t
        finish[i] = t + cost[i]
        push(events, (finish[i], 1, i))
        for k in range(msg_off[i], msg_off[i + 1]):
            c = msg_kids[k]
            push(events, (t + arrive_after[c], 0, c))

    while events:
        t, kind, i = pop(events)
        p = pe_l[i]
        if kind == 0:
            pending[i] -= 1
            if pending[i] > 0:
                continue
            if busy[p]:
                push(ready[p], (prio_l[i], t, orig[i], i))
            else:
                begin(i, max(t, free_at[p]))
            continue
        busy[p] = False
        free_at[p] = t + ovh[i]
        for k in range(obj_off[i], obj_off[i + 1]):
            push(events, (t, 0, obj_kids[k]))
        for k in range(hold_off[i], hold_off[i + 1]):
            c = hold_kids[k]
            push(events, (t + gap[c], 0, c))
        if ready[p]:
            begin(pop(ready[p])[3], free_at[p])
    return np.asarray(start, np.int64), np.asarray(finish, np.int64)
