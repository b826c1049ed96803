"""Object loads per step: one row per object and step, with objects as integer ids (oid) in the
text order of (coll, index), rolled up by the engine (events_object_steps); and the step matrix,
medians and per-object loads that placement reads from it (numpy on that table: never one row
per event).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def rows_where(mask: np.ndarray) -> np.ndarray | None:
    """Positions where mask holds, or None when it holds everywhere (take() then copies nothing)."""
    return None if bool(mask.all()) else np.flatnonzero(mask)


def take(a: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """a[rows], or a itself for rows None (all rows)."""
    return a if rows is None else a[rows]


TABLE = "object_steps"
"""The engine table events_object_steps fills (one row per object and step)."""


def object_steps(engine: Any) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """(rows of oid, pe, step, load_ns, execs, last_t1, sorted by (oid, step); one row per oid with
    its coll and index text, in oid order; whether any exec with a step carries load). An
    object's rows on several PEs in one step are summed; its PE in a step is that of its latest
    exec (the highest PE on a tie). Rows without an index text are no object of the table.
    The roll-up stays in the engine (events_object_steps, spilling under its memory limit): the
    client receives integers, and each label once."""
    cols = ["oid", "pe", "step", "load_ns", "execs", "last_t1"]
    engine.materialize(TABLE, "events_object_steps")
    try:
        rows = engine.sql(f"SELECT {', '.join(cols)} FROM {TABLE} WHERE oid IS NOT NULL ORDER BY oid, step")
        labels = engine.sql(f"SELECT coll, index FROM {TABLE} WHERE oid IS NOT NULL GROUP BY oid, coll, index "
                            "ORDER BY oid")
        stepped = engine.sql(f"SELECT coalesce(sum(load_ns) FILTER (WHERE step >= 0), 0) > 0 AS s FROM {TABLE}")
    finally:
        engine.sql(f"DROP TABLE IF EXISTS {TABLE}")
    table = rows.to_pandas(split_blocks=True, self_destruct=True)
    del rows
    return table.astype("int64"), labels.to_pandas(), bool(stepped.column("s")[0].as_py())


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
