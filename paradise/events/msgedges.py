"""communication_edges from the shared event arrays: the send -> exec join on `msg` done once.

The SQL query paradise/sql/communication_edges.sql defines the table (one row per object pair,
PEs and entry method); this module computes the same rows from paradise.events.execarrays,
whose one message match also feeds the exec graph, instead of joining every send to every exec
again in SQL. Keys are packed into one int64 per delivery and grouped with bincount / ufunc.at;
names are joined in after grouping. tests/unit/test_msgedges.py checks it against the SQL.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paradise.events.cache import cached
from paradise.events.eventload import NULL, EventArrays
from paradise.events.execarrays import event_arrays
from paradise.events.groupkeys import group_ids

KEYS = ("src_coll", "src_obj", "src_index", "src_pe", "dst_coll", "dst_obj", "dst_index", "dst_pe", "entry")
NAMED = {"src_coll", "src_index", "dst_coll", "dst_index", "entry"}
"""Key columns that are codes into EventArrays.names (-1: null); the others are ints or NULL."""
SCHEMA = pa.schema([("src_coll", pa.string()), ("src_obj", pa.int64()), ("src_index", pa.string()),
                    ("src_pe", pa.int32()), ("dst_coll", pa.string()), ("dst_obj", pa.int64()),
                    ("dst_index", pa.string()), ("dst_pe", pa.int32()), ("entry", pa.string()),
                    ("msgs", pa.int64()), ("bytes", pa.int64()), ("min_bytes", pa.int64()),
                    ("max_bytes", pa.int64()), ("bcast_msgs", pa.int64())])
ORDER = ("src_coll", "src_obj", "dst_coll", "dst_obj", "entry")


def _sort_keys(col: str, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.lexsort keys (minor first) ordering a key column as the SQL's ORDER BY, nulls last
    (name codes are in text order; -1 is a null name, NULL a null integer)."""
    null = v < 0 if col in NAMED else v == NULL
    return np.where(null, 0, v), null


SRC = {"src_coll": "coll", "src_obj": "obj", "src_index": "index", "src_pe": "pe"}
DST = {"dst_coll": ("coll", "peer_coll", -1), "dst_obj": ("obj", "peer_obj", NULL), "dst_pe": ("pe", "peer_pe", NULL),
       "entry": ("name", "name", -1)}
"""dst key: (exec column, send column it falls back to, null value): coalesce(x.col, s.col)."""


def deliveries(ea: EventArrays) -> tuple[np.ndarray, np.ndarray]:
    """Rows of (sends LEFT JOIN execs ON msg) as (send position, exec position or -1)."""
    matched = np.flatnonzero(ea.x_send >= 0)
    lone = np.flatnonzero(np.bincount(ea.x_send[matched], minlength=len(ea.sends["msg"])) == 0)
    return np.concatenate([ea.x_send[matched], lone]), np.concatenate([matched, np.full(len(lone), -1, np.int64)])


def key_column(ea: EventArrays, si: np.ndarray, xi: np.ndarray, k: str) -> np.ndarray:
    """Key column k of the deliveries (si, xi), computed when needed: one at a time in memory."""
    x, s = ea.execs, ea.sends
    if k in SRC:
        return s[SRC[k]][si]
    has, xk = xi >= 0, np.maximum(xi, 0)
    if k == "dst_index":
        return np.where(has, x["index"][xk], -1) if len(x["index"]) else np.full(len(si), -1, np.int64)
    xcol, scol, null = DST[k]
    xv = x[xcol][xk] if len(x[xcol]) else np.full(len(si), null, np.int64)
    return np.where(has & (xv != null), xv, s[scol][si])


def edges(ea: EventArrays) -> pa.Table:
    """The communication_edges table (same columns, types and order) from the event arrays."""
    si, xi = deliveries(ea)
    n = len(si)
    if n == 0:
        return SCHEMA.empty_table()
    g, groups = group_ids(key_column(ea, si, xi, k) for k in KEYS)
    nbytes = ea.sends["bytes"][si]
    known = nbytes != NULL
    first = np.full(groups, n, np.int64)
    np.minimum.at(first, g, np.arange(n, dtype=np.int64))
    lo = np.full(groups, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(lo, g[known], nbytes[known])
    hi = np.full(groups, NULL, np.int64)
    np.maximum.at(hi, g[known], nbytes[known])
    total = np.zeros(groups, np.int64)
    np.add.at(total, g[known], nbytes[known])
    fanned = np.bincount(ea.x_send[ea.x_send >= 0], minlength=len(ea.sends["msg"])) > 1  # broadcast messages
    casts = np.bincount(g, weights=fanned[si], minlength=groups).astype(np.int64)
    count = np.bincount(g, minlength=groups)
    del g, nbytes, known
    rep = {k: key_column(ea, si[first], xi[first], k) for k in KEYS}  # one row per group
    order = np.lexsort([a for c in reversed(ORDER) for a in _sort_keys(c, rep[c])])
    lo, hi, total, count, casts = lo[order], hi[order], total[order], count[order], casts[order]
    none = hi == NULL  # groups without a known payload size
    out: dict[str, pa.Array] = {}
    for k in KEYS:
        v = rep[k][order]
        null = v == NULL
        if k in NAMED:
            out[k] = pa.array([ea.names[c] if c >= 0 else None for c in v.tolist()], pa.string())
        elif k.endswith("_pe"):
            out[k] = pa.array(np.where(null, 0, v).astype(np.int32), pa.int32(), mask=null)
        else:
            out[k] = pa.array(v, pa.int64(), mask=null)
    out["msgs"] = pa.array(count.astype(np.int64))
    out["bytes"] = pa.array(total)
    out["min_bytes"] = pa.array(lo, pa.int64(), mask=none)
    out["max_bytes"] = pa.array(hi, pa.int64(), mask=none)
    out["bcast_msgs"] = pa.array(casts)
    return pa.table(out, schema=SCHEMA)


def communication_edges(engine: object) -> pa.Table:
    """edges(event_arrays(engine)), once per engine (placement and communication share it)."""
    return cached(engine, "edges", lambda: edges(event_arrays(engine)))
