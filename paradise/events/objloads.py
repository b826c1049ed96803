"""Object loads per step: placement_obj_load (one row per object, PE and step, a mergeable
aggregate that the engine runs) rolled up here to one row per object and step, with objects as
integer ids (oid) in the text order of (coll, index); and the step matrix, medians and per-object
loads that placement reads from it (numpy on that table: never one row per event).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa


def rows_where(mask: np.ndarray) -> np.ndarray | None:
    """Positions where mask holds, or None when it holds everywhere (take() then copies nothing)."""
    return None if bool(mask.all()) else np.flatnonzero(mask)


def take(a: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """a[rows], or a itself for rows None (all rows)."""
    return a if rows is None else a[rows]


OBJECT_STEPS_SQL = """
WITH g AS (
    SELECT coll, index, step, sum(load_ns) AS load_ns, sum(execs) AS execs,
           max({'t': last_t1, 'p': pe}) AS last
    FROM r WHERE coll IS NOT NULL AND index IS NOT NULL AND step IS NOT NULL
    GROUP BY coll, index, step
)
SELECT (dense_rank() OVER (ORDER BY coll, index) - 1)::BIGINT AS oid, last.p::BIGINT AS pe, step::BIGINT AS step,
       load_ns::BIGINT AS load_ns, execs::BIGINT AS execs, last.t::BIGINT AS last_t1, coll, index
FROM g ORDER BY oid, step
"""
"""The roll-up of placement_obj_load to one row per object and step, run by an in-process DuckDB
over the fetched table: integer object ids in the text order of (coll, index), the PE of the
latest exec (the highest PE on a tie); no Python object per row."""


def object_steps(engine: object) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """(rows of oid, pe, step, load_ns, execs, last_t1, sorted by (oid, step); one row per oid with
    its coll and index text, in oid order; whether any exec with a step carries load). An
    object's rows on several PEs in one step are summed; its PE in a step is that of its latest
    exec (the highest PE on a tie). Rows without an index text are no object of the table."""
    import duckdb

    t = engine.query("placement_obj_load")  # type: ignore[attr-defined]
    con = duckdb.connect(":memory:")
    try:
        con.register("r", t.select(["coll", "index", "pe", "step", "load_ns", "execs", "last_t1"]))
        stepped = bool(con.sql("SELECT coalesce(sum(load_ns) FILTER (WHERE step >= 0), 0) > 0 FROM r").fetchall()[0][0])
        rolled = con.sql(OBJECT_STEPS_SQL).to_arrow_table()
    finally:
        con.close()
    cols = ["oid", "pe", "step", "load_ns", "execs", "last_t1"]
    table = rolled.select(cols).to_pandas()
    if not len(table):
        table = pd.DataFrame({c: pd.Series(dtype="int64") for c in cols})
    first = np.r_[True, np.diff(rolled.column("oid").to_numpy()) != 0] if len(table) else np.zeros(0, bool)
    labels = rolled.select(["coll", "index"]).filter(pa.array(first)).to_pandas() if len(table) else \
        pd.DataFrame({"coll": pd.Series(dtype=object), "index": pd.Series(dtype=object)})
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
