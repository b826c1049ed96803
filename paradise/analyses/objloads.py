"""Placement's stage-1 tables from the shared event arrays instead of two more Parquet scans.

placement_pe_load and placement_obj_load (analyses/sql) define them; here they are grouped in
numpy from paradise.analyses.execarrays, with objects as integer ids (oid) whose order is the
text order of (coll, index), and names joined in only for the few rows of one per object.
Rows without an index text are left out of the object table, as pandas' groupby on (coll,
index) left them out before.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paradise.analyses.execarrays import NULL, EventArrays, group_ids, rows_where, take


def _ended(ea: EventArrays) -> np.ndarray:
    return ea.execs["t1"] != NULL


def pe_load(ea: EventArrays) -> pd.DataFrame:
    """placement_pe_load: per PE with exec rows, busy_ns (sum of active or t1 - t0), execs, t_min, t_max."""
    x, rows = ea.execs, rows_where(_ended(ea))
    pe, cost, t0, t1 = (take(x[c], rows) for c in ("pe", "cost_ns", "t0", "t1"))
    cost = np.where(cost == NULL, 0, cost)
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
    """placement_obj_load by object id, one row per object and step: (rows of oid, step, load_ns,
    execs, last_t1 and the PE of that latest exec; one row per oid with its coll and index text,
    in oid order; whether any exec row with a step carries load, the test
    placement.object_loads makes on all rows). Summing over PEs within a step changes none of
    placement's numbers: loads are summed per step, and the current PE is that of the latest exec."""
    x = ea.execs
    rows = rows_where(_ended(ea) & (x["coll"] >= 0))
    step = take(x["step"], rows)
    step = np.where(step == NULL, -1, step)
    load = take(x["cost_ns"], rows)
    load = np.where(load == NULL, 0, load)
    stepped = bool((step >= 0).any() and load[step >= 0].sum() > 0)
    named = take(x["index"], rows) >= 0
    if not named.all():
        rows = np.flatnonzero(named) if rows is None else rows[named]
        step, load = step[named], load[named]
    coll, index, pe, t1 = (take(x[c], rows) for c in ("coll", "index", "pe", "t1"))
    obj, n_obj = group_ids([index, coll])  # (coll, index) order: name codes are in text order
    first = np.full(n_obj, len(obj), np.int64)
    np.minimum.at(first, obj, np.arange(len(obj), dtype=np.int64))
    labels = pd.DataFrame({"coll": [ea.names[c] for c in coll[first].tolist()],
                           "index": [ea.names[i] for i in index[first].tolist()]})
    g, n = group_ids([step, obj])
    latest = np.full(n, NULL, np.int64)
    np.maximum.at(latest, g, t1)
    at = np.flatnonzero(t1 == latest[g])  # a row of each group's latest exec: its PE
    row = np.empty(n, np.int64)
    row[g[at]] = at
    total = np.zeros(n, np.int64)
    np.add.at(total, g, load)
    table = pd.DataFrame({"oid": obj[row], "pe": pe[row], "step": step[row], "load_ns": total,
                          "execs": np.bincount(g, minlength=n).astype(np.int64), "last_t1": latest})
    return table.sort_values(["oid", "step"], ignore_index=True), labels, stepped
