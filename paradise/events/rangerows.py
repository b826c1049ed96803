"""A range step's per-PE work with numpy over the rows in the files' order (the format's row order:
each PE's rows with t0 never decreasing, docs/trace-format.md "Row order"), with no sort where the
rows hold that order: each exec's number and predecessor on its PE, and each send row's sending exec.
The rows come from the engine (events_exec_rows, events_exec_sends: the `events` view, clock
corrections included); the columns computed here go back to it as Arrow (paradise.events.partitions).

Definitions (tests/oracles/exec_graph_rows.py states them as a plain walk):
* execs in (pe, t0, t1) order; id: the position in it (rank on its PE plus the PE's first id);
  pe_prev, pe_prev_t1 (its t0 + cost_ns), pe_prev_end (its t1): the exec before on its PE;
* a send's sending exec: the sender object's latest exec on its PE started at or before the send
  (the last in (t0, t1) order), when the send falls within its active time; else the PE's latest,
  when still running at the send; send_offset_ns: the send's time minus the start of the first of
  those two found (the object's, else the PE's), whether or not the send fell in it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paradise.engines import load_sql
from paradise.format.arrays import from_numpy, one_array, to_numpy, validity

EXEC_COLUMNS = ("id", "pe", "t0", "t1", "cost_ns", "coll", "obj", "index", "name", "step", "prio", "msg",
                "pe_prev", "pe_prev_t1", "pe_prev_end", "cat")
"""The columns of a range's execs (the bucket join's execs, paradise.events.bucketjoin)."""
SEND_COLUMNS = ("msg", "src_pe", "send_t0", "bytes", "src_id", "send_offset_ns", "coll", "obj", "index",
                "peer_pe", "peer_coll", "peer_obj", "name")
"""The columns of a range's send rows (the bucket join's sends)."""
ONE_BATCH_ROWS = 1 << 30
"""Rows per Arrow batch asked of DuckDB for a range's rows: more than a range holds."""
HASH_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)
"""Fibonacci hashing's multiplier (2^64 / the golden ratio): spreads message ids over the buckets."""


def buckets_of(msg: pa.ChunkedArray, ids: np.ndarray | None, buckets: int) -> np.ndarray:
    """The bucket of each row: its message's hash mod `buckets` (the same for a message's execs and
    sends, whichever range they are in); a row without a message goes by its id, if given (an exec
    joins no send)."""
    arr = one_array(msg)
    h = to_numpy(arr, np.int64).view(np.uint64) * HASH_MULTIPLIER
    out = ((h >> np.uint64(32)) % np.uint64(buckets)).astype(np.int32)
    if arr.null_count and ids is not None:
        nulls = ~validity(arr)
        out[nulls] = (ids[nulls] % buckets).astype(np.int32)
    return out


def _values(t: pa.Table, name: str, dtype: type) -> np.ndarray:
    return to_numpy(one_array(t.column(name)), dtype)


def _unordered(pe: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> bool:
    """Whether the rows leave (pe, t0, t1) order anywhere."""
    dp, d0 = pe[1:].astype(np.int64) - pe[:-1], t0[1:] - t0[:-1]
    return bool(((dp < 0) | ((dp == 0) & ((d0 < 0) | ((d0 == 0) & (t1[1:] < t1[:-1]))))).any())


def exec_rows(con: Any, lo: int, hi: int, pes: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The execs of PEs lo..hi in (pe, t0, t1) order with id, pe_prev, pe_prev_t1 and pe_prev_end
    appended; `pes` gives each PE's first id (off). Rows out of that order (several files of one PE,
    equal starts written longest first) are put in it by one stable sort of the range. Second: the
    execs without an end but with a message (no node of the graph; message edges count them), with
    those columns null."""
    return numbered(range_rows(con, "events_exec_rows", lo, hi), pes)


def range_rows(con: Any, query: str, lo: int, hi: int) -> pa.Table:
    """The rows of SQL file `query` (events_exec_rows or events_exec_sends) for PEs lo..hi, one chunk a
    column: DuckDB on one thread (a step beside others) gives them so in one batch, without the copy that
    joins the batches of several threads."""
    t = con.sql(load_sql(query), params={"lo": int(lo), "hi": int(hi)}).to_arrow_table(batch_size=ONE_BATCH_ROWS)
    return t if all(c.num_chunks <= 1 for c in t.columns) else t.combine_chunks()


def numbered(t: pa.Table, pes: pa.Table) -> tuple[pa.Table, pa.Table]:
    """exec_rows over the range's rows `t` (events_exec_rows)."""
    unended = t.slice(0, 0)
    if t.column("t1").null_count:
        ended = pc.is_valid(t.column("t1"))
        unended, t = t.filter(pc.invert(ended)), t.filter(ended)
    pe, t0, t1 = _values(t, "pe", np.int32), _values(t, "t0", np.int64), _values(t, "t1", np.int64)
    if len(pe) > 1 and _unordered(pe, t0, t1):
        order = np.lexsort((t1, t0, pe))
        t = t.take(from_numpy(order.astype(np.int64)))
        pe, t0, t1 = pe[order], t0[order], t1[order]
    n = len(pe)
    first = np.r_[True, pe[1:] != pe[:-1]] if n else np.zeros(0, np.bool_)
    starts = np.flatnonzero(first)
    group = np.cumsum(first) - 1
    pes_pe = to_numpy(one_array(pes.column("pe")), np.int32)
    pes_off = to_numpy(one_array(pes.column("off")), np.int64)
    off = pes_off[np.searchsorted(pes_pe, pe[starts])]
    ids = np.arange(n, dtype=np.int64) - starts[group] + off[group]
    end = t0 + _values(t, "cost_ns", np.int64)
    has_prev = ~first

    def prev(values: np.ndarray) -> pa.Array:
        return from_numpy(np.r_[np.zeros(min(n, 1), np.int64), values[:-1]], has_prev)

    t = (t.append_column("id", from_numpy(ids)).append_column("pe_prev", prev(ids))
         .append_column("pe_prev_t1", prev(end)).append_column("pe_prev_end", prev(t1)))
    for name in ("id", "pe_prev", "pe_prev_t1", "pe_prev_end"):
        unended = unended.append_column(name, pa.nulls(len(unended), pa.int64()))
    return t.select(EXEC_COLUMNS), unended.select(EXEC_COLUMNS)


def _latest(x_key: np.ndarray, x_t0: np.ndarray, s_key: np.ndarray, s_t0: np.ndarray) -> np.ndarray:
    """Per send, the position of the last exec of its key started at or before it (-1: none); the
    execs are sorted by (key, t0) and their keys are contiguous."""
    out = np.full(len(s_key), -1, np.int64)
    if not len(x_key) or not len(s_key):
        return out
    cut = np.flatnonzero(np.r_[True, x_key[1:] != x_key[:-1], True])
    keys = x_key[cut[:-1]]
    g = np.minimum(np.searchsorted(keys, s_key), len(keys) - 1)
    hit = keys[g] == s_key
    order = np.argsort(g, kind="stable")
    bounds = np.searchsorted(g[order], np.arange(len(keys) + 1))
    for k in np.flatnonzero(np.diff(bounds)):  # one search per key (PE) that has sends
        rows = order[bounds[k]:bounds[k + 1]]
        rows = rows[hit[rows]]
        lo, hi = cut[k], cut[k + 1]
        pos = np.searchsorted(x_t0[lo:hi], s_t0[rows], side="right") - 1
        out[rows] = np.where(pos >= 0, pos + lo, -1)
    return out


def _object_latest(x: pa.Table, s: pa.Table, which: np.ndarray) -> np.ndarray:
    """For the sends at positions `which` (with a sender object), the position in x of their sender
    object's latest exec on their PE started at or before them (-1: none): one merge of those sends
    with the execs of their objects by (pe, coll, obj, t0), a send after the execs of its instant."""
    out = np.full(len(which), -1, np.int64)
    s_obj, s_pe = _values(s, "obj", np.int64)[which], _values(s, "src_pe", np.int32)[which]
    x_obj, x_pe = _values(x, "obj", np.int64), _values(x, "pe", np.int32)
    xs = np.flatnonzero(_valid(x, "obj") & _valid(x, "coll") & np.isin(x_obj, s_obj) & np.isin(x_pe, s_pe))
    if not len(xs):
        return out
    coll = pc.dictionary_encode(pa.concat_arrays([_array(x, "coll").take(from_numpy(xs.astype(np.int64))),
                                                  _array(s, "coll").take(from_numpy(which.astype(np.int64)))]))
    code = to_numpy(coll.indices.cast(pa.int32()), np.int32)
    pe, obj = np.r_[x_pe[xs], s_pe], np.r_[x_obj[xs], s_obj]
    t0 = np.r_[_values(x, "t0", np.int64)[xs], _values(s, "send_t0", np.int64)[which]]
    is_send = np.r_[np.zeros(len(xs), np.int64), np.ones(len(which), np.int64)]
    at = np.r_[xs, np.arange(len(which))]  # an exec's position in x ((t0, t1) order), a send's in which
    order = np.lexsort((at * (1 - is_send), is_send, t0, obj, code, pe))
    pe, code, obj, is_send, at = pe[order], code[order], obj[order], is_send[order], at[order]
    idx = np.arange(len(order))
    new_key = np.r_[True, (pe[1:] != pe[:-1]) | (code[1:] != code[:-1]) | (obj[1:] != obj[:-1])]
    seg = np.maximum.accumulate(np.where(new_key, idx, 0))
    last = np.maximum.accumulate(np.where(is_send == 0, idx, -1))
    sends = np.flatnonzero(is_send)
    found = last[sends] >= seg[sends]
    out[at[sends]] = np.where(found, at[np.maximum(last[sends], 0)], -1)
    return out


def _array(t: pa.Table, name: str) -> pa.Array:
    return one_array(t.column(name))


def _valid(t: pa.Table, name: str) -> np.ndarray:
    return validity(_array(t, name))


def send_rows(con: Any, lo: int, hi: int, x: pa.Table) -> pa.Table:
    """The send rows of PEs lo..hi with src_id and send_offset_ns appended, from the range's execs
    `x` (exec_rows)."""
    return with_senders(range_rows(con, "events_exec_sends", lo, hi), x)


def with_senders(s: pa.Table, x: pa.Table) -> pa.Table:
    """send_rows over the range's send rows `s` (events_exec_sends)."""
    s_pe, s_t0 = _values(s, "src_pe", np.int32), _values(s, "send_t0", np.int64)
    n = len(s_pe)
    if not len(x):
        nulls = from_numpy(np.zeros(n, np.int64), np.zeros(n, np.bool_))
        return s.append_column("src_id", nulls).append_column("send_offset_ns", nulls).select(SEND_COLUMNS)
    x_t0, x_t1, x_cost = _values(x, "t0", np.int64), _values(x, "t1", np.int64), _values(x, "cost_ns", np.int64)
    x_id = _values(x, "id", np.int64)
    p = _latest(_values(x, "pe", np.int32), x_t0, s_pe, s_t0)  # the PE's latest exec
    has_p, pp = p >= 0, np.maximum(p, 0)
    sender = _valid(s, "coll") & _valid(s, "obj")
    x_coll = pc.dictionary_encode(_array(x, "coll"))  # compared as codes in the execs' dictionary
    s_coll = to_numpy(pc.index_in(_array(s, "coll"), value_set=x_coll.dictionary).fill_null(-1), np.int32)
    x_code = to_numpy(x_coll.indices.fill_null(-2).cast(pa.int32()), np.int32)
    same = (has_p & sender & (x_code[pp] == s_coll) & _valid(x, "obj")[pp]
            & (_values(x, "obj", np.int64)[pp] == _values(s, "obj", np.int64)))
    own = np.where(same, p, -1)  # the sender object's latest exec: nearly always the PE's latest
    other = np.flatnonzero(sender & ~same)
    if len(other):
        own[other] = _object_latest(x, s, other)
    has_own, oo = own >= 0, np.maximum(own, 0)
    in_own = has_own & (s_t0 - x_t0[oo] <= x_cost[oo])
    running = has_p & (s_t0 <= x_t1[pp])
    src = np.where(in_own, x_id[oo], x_id[pp])
    start = np.where(has_own, x_t0[oo], x_t0[pp])
    return (s.append_column("src_id", from_numpy(src, in_own | running))
            .append_column("send_offset_ns", from_numpy(s_t0 - start, has_own | has_p)).select(SEND_COLUMNS))
