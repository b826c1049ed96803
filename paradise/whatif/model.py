"""The replay model of a trace: the event layer's exec graph as numpy arrays.

Setup is vectorised: the exec graph table (paradise.events.execgraph) gives every exec with its cause,
and numpy turns it into arrays. Only the simulation in sim.py walks executions one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


@dataclass
class ExecGraph:
    """The event layer's exec graph as arrays, for the replay: one row per exec (arrays of equal
    length n); ids are positions."""

    pe: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    cost: np.ndarray
    src: np.ndarray  # sender exec id or -1
    offset: np.ndarray  # ns from the sender's start to the send
    nbytes: np.ndarray
    src_pe: np.ndarray  # PE of the send (-1 when unknown)
    send_t0: np.ndarray  # -1 when unknown
    obj_prev: np.ndarray  # previous exec of the same object or -1
    pe_prev: np.ndarray  # previous exec on the same PE or -1
    gap: np.ndarray  # ns idle on the PE before this exec (t0 - end of pe_prev, >= 0)
    hold: np.ndarray  # for execs no traced message caused: the exec (any PE) that ended last before it, or -1
    hold_gap: np.ndarray  # ns from that exec's end to this exec's start
    crit_pred: np.ndarray
    wait_msg: np.ndarray
    obj: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Each exec's row of `objects`."""
    objects: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({"coll": [], "index": []}, dtype=object))
    """The distinct (coll, index) pairs of the execs (None where the trace has none)."""
    entry: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """Each exec's row of `entries`."""
    entries: pd.DataFrame = field(default_factory=lambda: pd.DataFrame({"coll": [], "name": []}, dtype=object))
    """The distinct (coll, name) pairs of the execs: entry methods by collection."""
    prio: np.ndarray | None = None
    step: np.ndarray | None = None  # iteration the trace marks for the exec, -1 where none

    @property
    def n(self) -> int:
        return int(self.pe.shape[0])

    @property
    def makespan_ns(self) -> int:
        return int(self.t1.max() - self.t0.min()) if self.n else 0



def int_column(t: pa.Table, col: str, fill: int = -1) -> np.ndarray:
    """An Arrow column as int64 numpy, nulls replaced by `fill`."""
    c = pc.fill_null(t.column(col).cast(pa.int64()), fill)
    return np.asarray(c.to_numpy(zero_copy_only=False), dtype=np.int64)


_int = int_column


def pair_codes(table: pa.Table, a: str, b: str) -> tuple[np.ndarray, pd.DataFrame]:
    """Each row's code for its (a, b) pair of string columns and the distinct pairs (row = code,
    None for null), computed on dictionary indices: no Python string per row."""
    values, inner = [], []
    for col in (a, b):
        arr = table.column(col).combine_chunks()
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        enc = pc.dictionary_encode(arr)
        values.append([None, *enc.dictionary.to_pylist()])  # code 0: null
        inner.append(np.asarray(pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False), np.int64) + 1)
    width = len(values[1])
    uniq, code = np.unique(inner[0] * width + inner[1], return_inverse=True)
    pairs = pd.DataFrame({a: pd.Series([values[0][k] for k in (uniq // width).tolist()], dtype=object),
                          b: pd.Series([values[1][k] for k in (uniq % width).tolist()], dtype=object)})
    return code.astype(np.int64).reshape(-1), pairs


def _untraced_causes(t0: np.ndarray, cost: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each exec without a traced cause, the exec on any PE whose active end came last before
    its start (an untraced reduction, future or runtime message most likely came from there)."""
    n = len(t0)
    hold = np.full(n, -1, np.int64)
    gap = np.zeros(n, np.int64)
    if n == 0:
        return hold, gap
    end = t0 + cost
    order = np.argsort(end, kind="stable")
    ends = end[order]
    who = np.nonzero(src < 0)[0]
    k = np.searchsorted(ends, t0[who], side="right") - 1
    j = np.where(k >= 0, order[np.maximum(k, 0)], -1)
    same = j == who  # a zero-cost exec ends where it starts: take the one before it
    k2 = np.where(same, k - 1, k)
    j = np.where(k2 >= 0, order[np.maximum(k2, 0)], -1)
    hold[who] = j
    gap[who] = np.where(j >= 0, np.maximum(t0[who] - end[np.maximum(j, 0)], 0), 0)
    return hold, gap


def exec_graph(table: pa.Table) -> ExecGraph:
    """Arrays from the rows of the exec graph (paradise.events.bucketjoin; ordered by id)."""
    pe = _int(table, "pe")
    t0, t1 = _int(table, "t0", 0), _int(table, "t1", 0)
    cost = np.maximum(_int(table, "cost_ns", 0), 0)
    src = _int(table, "src_id")
    offset = _int(table, "send_offset_ns", 0)
    src_safe = np.where(src >= 0, src, 0)
    offset = np.clip(offset, 0, np.where(src >= 0, cost[src_safe], 0)) if len(src) else offset
    pe_prev = _int(table, "pe_prev")
    prev_t1 = _int(table, "pe_prev_t1", 0)
    gap = np.where(pe_prev >= 0, np.maximum(t0 - prev_t1, 0), 0)
    hold, hold_gap = _untraced_causes(t0, cost, src)
    obj, objects = pair_codes(table, "coll", "index")
    entry, entries = pair_codes(table, "coll", "name")
    return ExecGraph(
        hold=hold, hold_gap=hold_gap,
        pe=pe, t0=t0, t1=t1, cost=cost, src=src, offset=offset, nbytes=_int(table, "bytes", 0),
        src_pe=_int(table, "src_pe"), send_t0=_int(table, "send_t0"), obj_prev=_int(table, "obj_prev"),
        pe_prev=pe_prev, gap=gap, crit_pred=_int(table, "crit_pred"), wait_msg=_int(table, "wait_msg_ns", 0),
        obj=obj, objects=objects, entry=entry, entries=entries, prio=_int(table, "prio", 0),
        step=_int(table, "step") if "step" in table.column_names else None,
    )


STEP_LOAD_CLIP = 4.0
"""An object's step load above this many times its median step load is a preemption spike."""


def robust_cost(g: ExecGraph) -> np.ndarray:
    """Exec costs with each object's step loads clipped at STEP_LOAD_CLIP x its median step load.

    On a shared machine the OS deschedules a PE for 20-80 ms at a time, and the exec running
    then absorbs it: a 0.7 ms step reads 20 ms. Replayed as is, the spike moves with the object
    and makes the objects of the busiest (most preempted) PE look heavier than they are, so the
    replay under-rates moving them. The execs of a clipped (object, step) are scaled down
    together, then all stepped execs are scaled up so that their total stays the measured one
    (the spikes' time is shared out, not dropped); execs without a step or an object keep
    their measured cost."""
    cost = g.cost.astype(np.int64)
    if g.step is None or g.n == 0:
        return cost
    has = (g.step >= 0) & g.objects["coll"].notna().to_numpy()[g.obj]
    if not has.any():
        return cost
    ids = np.nonzero(has)[0]
    df = pd.DataFrame({"obj": g.obj[ids], "step": g.step[ids], "cost": cost[ids], "id": ids})
    per = df.groupby(["obj", "step"], sort=False)["cost"].sum().rename("load").reset_index()
    per["cap"] = STEP_LOAD_CLIP * per.groupby("obj", sort=False)["load"].transform("median")
    per["scale"] = np.where(per["load"] > per["cap"], per["cap"] / per["load"].clip(lower=1), 1.0)
    df = df.merge(per[["obj", "step", "scale"]], on=["obj", "step"], how="left")
    clipped = df["cost"].to_numpy() * df["scale"].fillna(1.0).to_numpy()
    # the clipped time is spread back over all stepped execs: preemption takes from whoever
    # runs, so once the load is balanced every PE pays its share of it
    if clipped.sum() > 0:
        clipped *= df["cost"].to_numpy().sum() / clipped.sum()
    out = cost.copy()
    out[df["id"].to_numpy()] = np.round(clipped).astype(np.int64)
    return out


def pe_under(g: ExecGraph, mapping: dict[str, dict[str, int]] | None) -> np.ndarray:
    """The PE of each exec when objects are placed by `mapping` ({coll: {index: pe}})."""
    if not mapping:
        return g.pe.copy()
    rows = [(c, i, int(p)) for c, objs in mapping.items() for i, p in objs.items()]
    m = pd.DataFrame(rows, columns=["coll", "index", "new_pe"]).drop_duplicates(["coll", "index"])
    m = m.astype({"coll": object, "index": object})
    per_object = g.objects.merge(m, on=["coll", "index"], how="left")["new_pe"].to_numpy(np.float64)
    new = per_object[g.obj]
    return np.where(np.isnan(new), g.pe, np.nan_to_num(new, nan=-1)).astype(np.int64)
