"""The exec and send rows of a trace as flat integer numpy arrays, read once per engine.

Two narrow queries: scheduling_events (exec and send rows in one scan: their rows interleave in
the files, so two queries would decode the shared columns twice) and scheduling_names. Strings
leave DuckDB as 63-bit hashes, turned here into codes into one sorted list of names, so no array
holds a string. Each message is matched to its send once (a table lookup on `msg`).

The result streams from DuckDB in record batches copied into arrays sized by the trace's row
count: on this kind of machine fresh memory costs more CPU than the copy, so the result is never
whole in memory twice. Only numpy and pyarrow are imported here, so `paradise analyze` can start
loading (start()) before the analyses' heavier imports are done: DuckDB runs the scan on the
other core meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paradise.events.cache import prefetch

NULL = np.iinfo(np.int64).min
"""A null integer in the event arrays (no PE, object, message or byte count takes this value)."""
EXEC_COLUMNS = ("pe", "t0", "t1", "cost_ns", "msg", "obj", "step", "okey")
SEND_COLUMNS = ("msg", "pe", "t0", "bytes", "obj", "peer_pe", "peer_obj", "okey")
EXEC_NAMES = ("coll_h", "index_h", "name_h")
SEND_NAMES = ("coll_h", "index_h", "name_h", "peer_coll_h")
INT32_COLUMNS = frozenset({"pe"} | set(EXEC_NAMES) | set(SEND_NAMES))
"""Columns kept as int32 (PEs are never null; name codes are -1 when null): on 10 million rows
each saves 13 MB, and fresh memory is what this work mostly pays for. Code that packs them
into wider keys casts first."""


@dataclass
class EventArrays:
    """Exec rows (all, in query order) and sends (one per message: its earliest send row) as int64
    arrays (int32 for INT32_COLUMNS) keyed by query column name; hashed strings (*_h) become codes
    into `names` (-1: null),
    other nulls are NULL. x_send: per exec, the position of its message's send, or -1; ended:
    how many execs have an end (the exec graph's size); reduce_targets: whether any exec with a
    coll and an end passes the reduction-target test of scheduling_events."""

    names: list[str]
    execs: dict[str, np.ndarray]
    sends: dict[str, np.ndarray]
    x_send: np.ndarray
    ended: int = 0
    reduce_targets: bool = False


def _int64(c: pa.Array, fill: int = NULL) -> np.ndarray:
    """An Arrow array as int64 numpy, nulls replaced by `fill` (no copy for int64 without nulls)."""
    if c.null_count:
        c = pc.fill_null(c.cast(pa.int64()), fill)
    return np.asarray(c.to_numpy(zero_copy_only=False), dtype=np.int64)


def _batches(engine: object, name: str) -> tuple[Iterable[pa.RecordBatch], int | None]:
    """A stage-1 query's result as record batches, and an upper bound on its rows when the engine
    streams (DuckDB: the trace's row count), else the whole table's batches and its length."""
    stream = getattr(engine, "batches", None)
    bound = getattr(getattr(engine, "trace", None), "num_rows", None)
    if stream is not None and isinstance(bound, int):
        return stream(name), bound
    t = engine.query(name)  # type: ignore[attr-defined]
    return t.to_batches(), t.num_rows


def _fetch(engine: object, codes: Callable[[np.ndarray], np.ndarray]) -> tuple[dict[str, np.ndarray],
                                                                           dict[str, np.ndarray], bool]:
    """The exec and send rows of scheduling_events as arrays keyed by column (int64, or int32
    for INT32_COLUMNS; hashed strings as name codes: coll_h -> coll), and whether any exec is a
    reduction target. Copied batch by batch into arrays sized by the row bound: the result is
    never whole in memory twice (on this kind of machine, fresh memory costs more CPU than the
    copy). Untouched tails of the over-sized arrays are never paged in."""
    batches, bound = _batches(engine, "scheduling_events")
    kinds = ((EXEC_COLUMNS, EXEC_NAMES), (SEND_COLUMNS, SEND_NAMES))
    dtype = {c: np.int32 if c in INT32_COLUMNS else np.int64 for c in EXEC_COLUMNS + EXEC_NAMES + SEND_COLUMNS + SEND_NAMES}
    out = [{col: np.empty(bound, dtype[col]) for col in ints + hashed} for ints, hashed in kinds]
    filled = [0, 0]
    reduce_any = False
    for b in batches:
        is_send = _int64(b.column("is_send")) == 1
        for i, ((ints, hashed), rows) in enumerate(zip(kinds, (np.flatnonzero(~is_send), np.flatnonzero(is_send)))):
            k, n = len(rows), filled[i]
            if n + k > len(out[i]["pe"]):  # an engine that returned more rows than the bound
                out[i] = {col: np.concatenate([a[:n], np.empty(n + k, a.dtype)]) for col, a in out[i].items()}
            for col in ints:  # gathered straight into place: no temporary per column
                c, dest = b.column(col), out[i][col][n:n + k]
                v = c.to_numpy() if c.null_count == 0 and c.type.bit_width == 8 * dest.itemsize else _int64(c)
                if v.dtype == dest.dtype:
                    np.take(v, rows, out=dest)
                else:
                    dest[:] = v[rows]
            for col in hashed:
                out[i][col][n:n + k] = codes(_int64(b.column(col))[rows])
            filled[i] += k
        if not reduce_any:  # communication_reductions' candidate test, on exec rows with coll and t1
            reduce_any = bool(np.any((_int64(b.column("reduce_target")) == 1) & ~is_send
                                     & (_int64(b.column("coll_h")) != NULL) & (_int64(b.column("t1")) != NULL)))
    execs, sends = ({(c[:-2] if c in hashed else c): a[:n] for c, a in o.items()}
                    for o, n, (_, hashed) in zip(out, filled, kinds))
    return execs, sends, reduce_any


def rows_where(mask: np.ndarray) -> np.ndarray | None:
    """Positions where mask holds, or None when it holds everywhere (take() then copies nothing)."""
    return None if bool(mask.all()) else np.flatnonzero(mask)


def take(a: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    """a[rows], or a itself for rows None (all rows)."""
    return a if rows is None else a[rows]


def _dense_span(keys: np.ndarray) -> tuple[int, int] | None:
    """(min, span) when the keys are dense enough for a direct-address table (message ids
    usually are: 1..N), else None."""
    if len(keys) == 0:
        return None
    lo, hi = int(keys.min()), int(keys.max())
    return (lo, hi - lo + 1) if hi - lo < 4 * len(keys) + 1024 else None


def _is_unique(keys: np.ndarray) -> bool:
    dense = _dense_span(keys)
    if dense is None:
        import pandas as pd

        return bool(pd.Index(keys).is_unique)
    return bool(np.bincount(keys - dense[0], minlength=1).max(initial=0) <= 1)


def positions(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query, the position of the equal key (keys unique), or -1: a table lookup when the
    keys are dense, else a hash lookup."""
    if len(keys) == 0:
        return np.full(len(queries), -1, np.int64)
    dense = _dense_span(keys)
    if dense is None:
        import pandas as pd

        return np.asarray(pd.Index(keys).get_indexer(queries), np.int64)
    lo, span = dense
    table = np.full(span, -1, np.int64)
    table[keys - lo] = np.arange(len(keys), dtype=np.int64)
    inside = (queries >= lo) & (queries < lo + span)
    return np.where(inside, table[np.where(inside, queries - lo, 0)], -1)


def _earliest_send(s: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One row per msg: its earliest send row, bytes the largest of its rows (unchanged, without
    a sort, when every msg has one send row: the usual case)."""
    if _is_unique(s["msg"]):
        return s
    order = np.lexsort((s["t0"], s["msg"]))
    s = {k: v[order] for k, v in s.items()}
    first = np.flatnonzero(np.r_[True, s["msg"][1:] != s["msg"][:-1]])
    out = {k: v[first] for k, v in s.items()}
    out["bytes"] = np.maximum.reduceat(s["bytes"], first)  # NULL is the smallest int64: ignored
    return out


def _hash_to_code(hashes: np.ndarray, code: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """A function mapping name hashes to their codes as int32 (NULL and unknown hashes: -1), a
    binary search in the sorted hashes (a few thousand names at most)."""
    by_hash = np.argsort(hashes, kind="stable")
    sorted_h, code_of = hashes[by_hash], np.append(code[by_hash], -1).astype(np.int32)

    def search(h: np.ndarray) -> np.ndarray:
        at = np.searchsorted(sorted_h, h)
        found = at < len(sorted_h)
        found[found] = sorted_h[at[found]] == h[found]
        return code_of[np.where(found, at, len(sorted_h))]

    return search


def load(engine: object) -> EventArrays:
    """The two narrow queries, as arrays, with each exec matched to its message's send."""
    nm = engine.query("scheduling_names")  # type: ignore[attr-defined]
    labels = [str(v) for v in nm.column("label").to_pylist()]
    hashes = _int64(nm.column("h").combine_chunks()) if nm.num_rows else np.zeros(0, np.int64)
    order = sorted(range(len(labels)), key=labels.__getitem__)  # codes in text order, whatever the engine
    names = [labels[i] for i in order]
    code_by_label = np.empty(len(labels), np.int64)
    code_by_label[np.asarray(order, np.int64)] = np.arange(len(order), dtype=np.int64)
    codes = _hash_to_code(hashes, code_by_label)
    execs, sends, reduce_any = _fetch(engine, codes)
    sends = _earliest_send(sends)
    return EventArrays(names=names, execs=execs, sends=sends, x_send=positions(sends["msg"], execs["msg"]),
                       ended=int(np.count_nonzero(execs["t1"] != NULL)), reduce_targets=reduce_any)


def start(engine: object) -> None:
    """Begins load(engine) on another thread, under the key execarrays.event_arrays reads."""
    prefetch(engine, "event_arrays", lambda: load(engine))
