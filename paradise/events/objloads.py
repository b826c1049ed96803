"""Placement's stage-1 tables from the shared event arrays instead of two more Parquet scans.

placement_pe_load and placement_obj_load (paradise/sql) define them; here they are grouped in
numpy from paradise.events.execarrays, with objects as integer ids (oid) whose order is the
text order of (coll, index), and names joined in only for the few rows of one per object.
Rows without an index text are left out of the object table, as pandas' groupby on (coll,
index) left them out before. step_matrix, row_medians and oid_loads are placement's stage 2 on
that table in numpy (pandas' unstack, median and groupby on a million object x step rows cost
most of placement's own time).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paradise.events.eventload import NULL, EventArrays, rows_where, take
from paradise.events.groupkeys import group_ids


def _fill(a: np.ndarray, value: int) -> np.ndarray:
    """a as int64 with NULL replaced by value; a itself (no copy: 27 MB on 3.3 million execs, and
    fresh memory costs) when it is int64 without NULL."""
    a = a.astype(np.int64, copy=False)
    null = a == NULL
    return np.where(null, value, a) if null.any() else a


def _ended(ea: EventArrays) -> np.ndarray:
    return ea.execs["t1"] != NULL


def pe_load(ea: EventArrays) -> pd.DataFrame:
    """placement_pe_load: per PE with exec rows, busy_ns (sum of active or t1 - t0), execs, t_min, t_max."""
    x, rows = ea.execs, rows_where(_ended(ea))
    pe, cost, t0, t1 = (take(x[c], rows) for c in ("pe", "cost_ns", "t0", "t1"))
    cost = _fill(cost, 0)
    if len(pe) == 0:
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in ("pe", "busy_ns", "execs", "t_min", "t_max")})
    g, n = group_ids([pe])
    pes = np.empty(n, np.int64)
    pes[g] = pe
    busy = np.zeros(len(pes), np.int64)
    np.add.at(busy, g, cost)
    t_min = np.full(len(pes), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(t_min, g, t0)
    t_max = np.full(len(pes), NULL, np.int64)
    np.maximum.at(t_max, g, t1)
    return pd.DataFrame({"pe": pes, "busy_ns": busy, "execs": np.bincount(g, minlength=len(pes)),
                         "t_min": t_min, "t_max": t_max})


def object_rows(ea: EventArrays) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """placement_obj_load by object id, one row per object and step, sorted by (oid, step): (rows
    of oid, step, load_ns, execs, last_t1 and the PE of that latest exec; one row per oid with its
    coll and index text, in oid order; whether any exec row with a step carries load, the test
    placement.object_loads makes on all rows). Summing over PEs within a step changes none of
    placement's numbers: loads are summed per step, and the current PE is that of the latest exec.
    One grouping by (coll, index, step) gives both the rows and the object ids."""
    x = ea.execs
    rows = rows_where(_ended(ea) & (x["coll"] >= 0))
    step = _fill(take(x["step"], rows), -1)
    load = _fill(take(x["cost_ns"], rows), 0)
    has_step = step >= 0
    stepped = bool(has_step.any() and load.sum(where=has_step) > 0)
    del has_step
    named = take(x["index"], rows) >= 0
    if not named.all():
        rows = np.flatnonzero(named) if rows is None else rows[named]
        step, load = step[named], load[named]
    coll, index, pe, t1 = (take(x[c], rows) for c in ("coll", "index", "pe", "t1"))
    g, n = group_ids([step, index, coll])  # (coll, index, step) order: name codes are in text order
    latest = np.full(n, NULL, np.int64)
    np.maximum.at(latest, g, t1)
    at = np.flatnonzero(t1 == latest[g])  # a row of each group's latest exec: its PE
    row = np.empty(n, np.int64)
    row[g[at]] = at
    total = np.zeros(n, np.int64)
    np.add.at(total, g, load)
    g_coll, g_index = coll[row], index[row]
    new = np.ones(n, bool)
    new[1:] = (g_coll[1:] != g_coll[:-1]) | (g_index[1:] != g_index[:-1])
    oid = np.cumsum(new) - 1
    labels = pd.DataFrame({"coll": [ea.names[c] for c in g_coll[new].tolist()],
                           "index": [ea.names[i] for i in g_index[new].tolist()]})
    table = pd.DataFrame({"oid": oid, "pe": pe[row].astype(np.int64), "step": step[row], "load_ns": total,
                          "execs": np.bincount(g, minlength=n).astype(np.int64), "last_t1": latest},
                         copy=False)  # the arrays are this table's alone: a copy is 40 MB of fresh memory
    return table, labels, stepped


def step_matrix(obj: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The step loads of object_rows' table as a float matrix, one row per oid (0..max oid), one
    column per step >= 0 in step order, NaN where an object has no row for that step (what
    pandas' unstack of (oid, step) gives, as numpy); and the steps."""
    rows = rows_where(obj["step"].to_numpy(np.int64) >= 0)
    oid, step, load = (take(obj[c].to_numpy(np.int64), rows) for c in ("oid", "step", "load_ns"))
    n_obj = int(obj["oid"].max()) + 1 if len(obj) else 0
    if len(step) and int(step.max()) - int(step.min()) < 4 * len(step) + 1024:  # steps are few: a table
        present = np.bincount(step - step.min()) > 0
        col = (np.cumsum(present) - 1)[step - step.min()]
        steps = np.flatnonzero(present) + step.min()
    else:
        steps, col = np.unique(step, return_inverse=True)
    m = np.full((n_obj, len(steps)), np.nan)
    m[oid, col] = load
    return m, steps


def row_medians(m: np.ndarray) -> np.ndarray:
    """Along the last axis, the median of the non-NaN values (NaN for none), as pandas computes
    it: the middle value, or the mean of the two middle values. A sort, not np.median: numpy's
    SIMD sort is several times faster than the two-point partition np.median uses."""
    if m.shape[-1] == 0:
        return np.full(m.shape[:-1], np.nan)
    srt = np.sort(m, axis=-1)  # NaN last
    k = m.shape[-1] - np.isnan(m).sum(axis=-1)
    lo = np.take_along_axis(srt, (np.maximum(k - 1, 0) // 2)[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(srt, (k // 2)[..., None], axis=-1)[..., 0]
    return np.where(k > 0, (lo + hi) / 2, np.nan)


def oid_loads(obj: pd.DataFrame, stepped: bool, m: np.ndarray, med: np.ndarray) -> pd.DataFrame | None:
    """placement.object_loads(obj, ("oid",), stepped) for object_rows' table, in numpy: one row
    per oid (oid, load_ns, execs, pe). `m`, `med`: step_matrix(obj)[0] and its row_medians.
    None when two rows of one object share its latest end (the current PE then depends on
    pandas' sort order: the caller falls back to object_loads)."""
    oid = obj["oid"].to_numpy(np.int64)
    n_obj = int(oid[-1]) + 1 if len(oid) else 0
    last_t1 = obj["last_t1"].to_numpy(np.int64)
    starts = np.flatnonzero(np.r_[True, oid[1:] != oid[:-1]]) if len(oid) else np.zeros(0, np.int64)
    latest = np.maximum.reduceat(last_t1, starts) if len(oid) else last_t1
    at = np.flatnonzero(last_t1 == latest[oid])
    if len(at) != n_obj:
        return None
    load = obj["load_ns"].to_numpy(np.int64)
    execs = obj["execs"].to_numpy(np.int64)
    if stepped:
        s = obj["step"].to_numpy(np.int64) >= 0
        n = (~np.isnan(m)).sum(axis=1)
        loads = np.where(n > 0, med * n, 0).astype(np.int64)  # typical step x steps, as object_loads
        execs_per = np.zeros(n_obj, np.int64)
        np.add.at(execs_per, oid[s], execs[s])
    else:
        loads, execs_per = np.add.reduceat(load, starts), np.add.reduceat(execs, starts)
    return pd.DataFrame({"oid": np.arange(n_obj, dtype=np.int64), "load_ns": loads, "execs": execs_per,
                         "pe": obj["pe"].to_numpy(np.int64)[at]})
