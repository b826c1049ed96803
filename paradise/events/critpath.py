"""The critical path of a run, followed through the exec graph table without loading it.

Each exec's critical predecessor (scheduling_exec_graph: the exec whose message released it when
that message came after its PE was free, else the previous exec on its PE) is a column of the
table. Walking back along it, a path stays on one PE through consecutive ids until an exec that
a message released (or the PE's first exec): only those hop rows are fetched
(events_critical_hops), the walk jumps from hop to hop, and the path is kept as segments of
consecutive ids that SQL then aggregates (events_critical_entries).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from paradise.engines import load_sql
from paradise.events.execgraph import ExecGraphInfo, LatencyModel


@dataclass(frozen=True)
class CriticalPath:
    """The path as segments [lo, hi] of consecutive exec ids (one PE each), first to last."""

    lo: list[int]
    hi: list[int]
    t0_first: int
    t1_last: int
    message_hops: int
    """Steps between segments: each is a message from the segment before."""

    @property
    def length_ns(self) -> int:
        return self.t1_last - self.t0_first if self.lo else 0

    @property
    def execs(self) -> int:
        return sum(h - lo + 1 for lo, h in zip(self.lo, self.hi))


def critical_path(engine: Any, info: ExecGraphInfo) -> CriticalPath:
    """Back from the exec whose active time ends last, from hop to hop, until an exec without a
    critical predecessor (or one already on the path: clock skew can make a cycle)."""
    if info.execs == 0 or info.last_id is None:
        return CriticalPath([], [], 0, 0, 0)
    ids, pred = _hops(engine, info.execs)
    segs: list[tuple[int, int]] = []
    # A segment runs from its hop row's id to at most the next hop row's id - 1, so two segments
    # can only overlap when they start at the same hop row: the walk keeps the end of the segment
    # it took from each hop row (hi_at), and each step checks one entry, not the whole path.
    hi_at: dict[int, int] = {}
    cur = int(info.last_id)
    while True:
        k = int(np.searchsorted(ids, cur, side="right")) - 1  # the hop row that starts cur's run
        lo = int(ids[k])
        if hi_at.get(k, cur) < cur:  # the run reaches the path again: a cycle (clock skew)
            segs.append((hi_at[k] + 1, cur))
            break
        segs.append((lo, cur))
        hi_at[k] = max(hi_at.get(k, cur), cur)
        nxt = int(pred[k])
        if nxt < 0:
            break
        kn = int(np.searchsorted(ids, nxt, side="right")) - 1
        if kn in hi_at and nxt <= hi_at[kn]:  # nxt lies on the path already
            break
        cur = nxt
    segs.reverse()
    first = segs[0][0]
    t0_first = int(engine.query("events_exec_t0", id=first).column("t0")[0].as_py())
    return CriticalPath(lo=[a for a, _ in segs], hi=[b for _, b in segs], t0_first=t0_first,
                        t1_last=int(info.last_t1), message_hops=len(segs) - 1)


def _hops(engine: Any, execs: int) -> tuple[np.ndarray, np.ndarray]:
    """The hop rows' ids and critical predecessors as two numpy arrays, 32-bit while the ids fit
    (a hop row per exec at worst: 400 MB for 5*10^7 executions, never a Python object per row)."""
    kind = "INTEGER" if execs < 2**31 else "BIGINT"
    t = engine.sql(f"SELECT CAST(id AS {kind}) AS id, CAST(crit_pred AS {kind}) AS crit_pred "
                   f"FROM ({load_sql('events_critical_hops')}) ORDER BY id")
    return t.column("id").to_numpy(), t.column("crit_pred").to_numpy()


def path_entries(engine: Any, path: CriticalPath, model: LatencyModel) -> Any:
    """Per (coll, entry) on the path: compute, queue delay, execs and same-PE message hops
    (events_critical_entries), as a pyarrow table."""
    return engine.query("events_critical_entries", lo=path.lo, hi=path.hi, a_ns=float(model.a_ns),
                        ns_per_byte=float(model.ns_per_byte), local_ns=float(model.local_ns))
