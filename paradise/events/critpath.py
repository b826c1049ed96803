"""The critical path of a run, followed through the exec graph table without loading it.

Each exec's critical predecessor (crit_pred, paradise.events.bucketjoin: the exec whose message released it when
that message came after its PE was free, else the previous exec on its PE) is a column of the
table. Walking back along it, a path stays on one PE through consecutive ids until an exec that
a message released (or the PE's first exec): only those hop rows are fetched
(events_critical_hops, a bucket of the graph at a time: paradise.events.graphread), the walk jumps
from hop to hop, and the path is kept as segments of consecutive ids that SQL then aggregates
(events_critical_entries) over the path's rows, which each bucket gives (events_critical_rows), in
ranges of exec ids on the engine's steps (paradise.events.critentries): the client keeps the path's
segments and its hop rows (at most one row per exec on the path), never the path's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from paradise.events import critentries, graphread
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
    ids, pred = _hops(engine, info)
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
    t0_first = info.pe_first.get(first)  # a PE's first exec, unless the walk stopped at a cycle
    if t0_first is None:
        t0_first = int(graphread.united(engine, info.parts, "events_exec_t0", id=first).column("t0")[0].as_py())
    return CriticalPath(lo=[a for a, _ in segs], hi=[b for _, b in segs], t0_first=t0_first,
                        t1_last=int(info.last_t1), message_hops=len(segs) - 1)


def hop_step(con: Any, files: list[str] | None, narrow: bool) -> Any:
    """Reader step of events_critical_hops over one bucket (graphread.reader_step): its rows sorted
    by id, `narrow` (ids below 2^31) packed one per int64 (id in the high half, crit_pred's 32 bits
    in the low), else as (ids, preds) int64 arrays."""
    t = graphread.reader_step(con, "events_critical_hops", files, {})
    ids, pred = (t.column(c).to_numpy().astype(np.int64, copy=False) for c in ("id", "crit_pred"))
    del t
    if not narrow:
        order = np.argsort(ids, kind="stable")
        return ids[order], pred[order]
    packed = (ids << 32) | (pred & 0xFFFFFFFF)
    packed.sort()
    return packed


def _hops(engine: Any, info: ExecGraphInfo) -> tuple[np.ndarray, np.ndarray]:
    """The hop rows' ids and critical predecessors as two numpy arrays ordered by id, 32-bit while
    the ids fit (a hop row per exec at worst: 400 MB for 5*10^7 executions, never a Python object
    per row), from the graph's buckets (events_critical_hops): each bucket's rows come sorted and
    packed in one int64 (hop_step), the client merges the sorted runs and unpacks them, so it holds
    at most two such copies (16 bytes per hop row)."""
    narrow = info.execs < 2**31
    items = [{"files": [f], "narrow": narrow} for f in info.parts] or [{"files": None, "narrow": narrow}]
    parts = engine.run_steps(hop_step, items, files=[[] for _ in items])
    if not narrow:
        ids_all, pred_all = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
        order = np.argsort(ids_all, kind="stable")
        return ids_all[order], pred_all[order]
    packed = np.concatenate(parts)
    del parts
    packed.sort(kind="stable")  # a merge of the buckets' sorted runs
    pred = packed.astype(np.uint32).view(np.int32)  # the low half: crit_pred, -1 kept
    np.right_shift(packed, 32, out=packed)
    return packed.astype(np.int32), pred


def path_entries(engine: Any, info: ExecGraphInfo, path: CriticalPath, model: LatencyModel) -> Any:
    """Per (coll, entry) on the path: compute, queue delay, execs and same-PE message hops
    (events_critical_entries, summed in ranges of exec ids by engine steps: paradise.events.critentries),
    as a pyarrow table."""
    cost = {"a_ns": float(model.a_ns), "ns_per_byte": float(model.ns_per_byte), "local_ns": float(model.local_ns)}
    return critentries.path_entries(engine, info.parts, list(path.lo), list(path.hi), cost)
