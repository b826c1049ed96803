"""A bucket step's send -> exec join with numpy over the bucket's rows (paradise.events.partitions):
each message's send found by a sort of the bucket's message ids and a binary search per exec, no
hash table. It gives the bucket's part of the exec graph and its message deliveries, which the
message edges (communication_edges) group; a message's send and execs all land in its bucket.

The exec graph's columns (one row per exec with an end; the buckets' rows together are the graph):
  id, pe, t0, t1, cost_ns, coll, obj, index, name, step, prio, pe_prev, pe_prev_t1, pe_prev_end
      (the range step's: paradise.events.rangerows)
  src_id      (id of the exec that sent the message causing this one, null when unknown)
  src_pe, send_t0 (PE and ns of the message's send: its earliest send row, the lowest PE on a tie)
  send_offset_ns (ns, send_t0 - start of the sending exec)
  bytes       (bytes of the message: the largest of its send rows)
  crit_pred   (id of the binding predecessor: the sender when its message came after the PE was free
               (send_t0 > pe_prev_t1, or no pe_prev) and it is not the exec itself, else pe_prev)
  wait_msg_ns (ns, in that case the idle time before this exec since pe_prev_t1, or since the run's
               first exec (run_t0) for a PE's first; else 0)
The same graph as a plain walk, the test oracle: tests/oracles/exec_graph_rows.py.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paradise.format.arrays import from_numpy, one_array, to_numpy, validity

GRAPH_COLUMNS = ("id", "pe", "t0", "t1", "cost_ns", "coll", "obj", "index", "name", "step", "prio",
                 "pe_prev", "pe_prev_t1", "pe_prev_end", "src_id", "src_pe", "send_t0", "send_offset_ns",
                 "bytes", "crit_pred", "wait_msg_ns")
"""The exec graph's columns, in its files' order."""
DELIVERY_COLUMNS = ("src_coll", "src_obj", "src_index", "src_pe", "peer_coll", "peer_obj", "peer_pe", "send_name",
                    "bytes", "x_coll", "x_obj", "x_index", "x_pe", "x_name", "x_cat", "bcast")
"""A delivery (communication_edges' input): the message's send (its sender, the send's peer_* and
name, bytes), the exec it caused (x_*: null for a message with no exec in the trace), and whether
the message caused more than one exec (bcast)."""


def _ints(t: pa.Table, name: str, dtype: type) -> tuple[np.ndarray, np.ndarray]:
    arr = one_array(t.column(name))
    return to_numpy(arr, dtype), validity(arr)


def _flat(t: pa.Table) -> pa.Table:
    """`t` with each column in one chunk, for a take (pyarrow's take over a column of several chunks,
    one per file, is several times slower; so is Table.combine_chunks against a column at a time)."""
    return pa.table([one_array(t.column(c)) for c in t.column_names], names=t.column_names)


def _at(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """values[at], or zeros where there are no values (a bucket without sends: every `at` masked)."""
    return values[at] if len(values) else np.zeros(len(at), values.dtype)


def first_sends(s: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per message of the send rows `s`: its id (ascending), the position in `s` of its earliest send
    row (by send_t0, then src_pe), and its largest bytes with their validity."""
    msg, _ = _ints(s, "msg", np.int64)
    order = np.argsort(msg, kind="stable")
    m = msg[order]
    new = np.r_[True, m[1:] != m[:-1]] if len(m) else np.zeros(0, np.bool_)
    starts = np.flatnonzero(new)
    b, b_ok = _ints(s, "bytes", np.int64)
    b = np.where(b_ok, b, np.iinfo(np.int64).min)[order]
    b_ok = b_ok[order]
    if len(starts) < len(m):  # messages of several send rows: theirs sorted by (send_t0, src_pe)
        counts = np.diff(np.r_[starts, len(m)])
        several = np.repeat(counts > 1, counts)
        sub = order[several]
        t0, pe = _ints(s, "send_t0", np.int64)[0], _ints(s, "src_pe", np.int32)[0]
        order[several] = sub[np.lexsort((pe[sub], t0[sub], msg[sub]))]
        b_max, any_ok = np.maximum.reduceat(b, starts), np.logical_or.reduceat(b_ok, starts)
    else:
        b_max, any_ok = b, b_ok
    return m[starts], order[starts], b_max, any_ok


def join(x: pa.Table, s: pa.Table, run_t0: int) -> tuple[pa.Table, pa.Table]:
    """(the bucket's exec graph rows, its deliveries) from its execs `x` (rangerows.EXEC_COLUMNS;
    rows with a null id have no end and enter only the deliveries) and send rows `s`
    (rangerows.SEND_COLUMNS)."""
    umsg, first, b_max, b_ok = first_sends(s)
    x_msg, x_has = _ints(x, "msg", np.int64)
    pos = np.minimum(np.searchsorted(umsg, x_msg), max(len(umsg) - 1, 0))
    hit = x_has & (_at(umsg, pos) == x_msg) & (len(umsg) > 0)
    at = _at(first, pos)  # the send row of each exec's message
    graph = _graph(x, s, at, hit, _at(b_max, pos), hit & _at(b_ok, pos), run_t0)
    return graph, _deliveries(x, s, umsg, first, b_max, b_ok, pos, hit)


def _graph(x: pa.Table, s: pa.Table, at: np.ndarray, hit: np.ndarray, b: np.ndarray, b_ok: np.ndarray,
           run_t0: int) -> pa.Table:
    """The exec graph's rows of the ended execs (a valid id), `at` their message's send row in `s`."""
    xid, ended = _ints(x, "id", np.int64)
    keep = np.flatnonzero(ended)
    if len(keep) < len(xid):
        x = _flat(x).take(from_numpy(keep))
        at, hit, b, b_ok, xid = at[keep], hit[keep], b[keep], b_ok[keep], xid[keep]
    src, src_ok = (_at(v, at) for v in _ints(s, "src_id", np.int64))
    off, off_ok = (_at(v, at) for v in _ints(s, "send_offset_ns", np.int64))
    spe, st0 = _at(_ints(s, "src_pe", np.int32)[0], at), _at(_ints(s, "send_t0", np.int64)[0], at)
    src_ok, off_ok = src_ok & hit, off_ok & hit
    prev, has_prev = _ints(x, "pe_prev", np.int64)
    prev_t1 = _ints(x, "pe_prev_t1", np.int64)[0]
    t0 = _ints(x, "t0", np.int64)[0]
    binds = src_ok & (~has_prev | (st0 > prev_t1))
    crit = binds & (src != xid)
    wait = np.where(binds, np.maximum(t0 - np.where(has_prev, prev_t1, run_t0), 0), 0)
    cols = [x.column(c) for c in GRAPH_COLUMNS[:14]] + [pa.chunked_array([a]) for a in (
        from_numpy(src, src_ok), from_numpy(spe, hit), from_numpy(st0, hit), from_numpy(off, off_ok),
        from_numpy(b, b_ok), from_numpy(np.where(crit, src, prev), crit | has_prev), from_numpy(wait))]
    return pa.table(cols, names=list(GRAPH_COLUMNS))


def _deliveries(x: pa.Table, s: pa.Table, umsg: np.ndarray, first: np.ndarray, b_max: np.ndarray,
                b_ok: np.ndarray, pos: np.ndarray, hit: np.ndarray) -> pa.Table:
    """One row per exec of a message with a send (x_* its own), then one per message without an exec
    (x_* null): the send's columns from its earliest row `first`."""
    matched = np.flatnonzero(hit)
    g = pos[matched]  # the message of each delivery
    execs_of = np.bincount(g, minlength=len(umsg))
    alone = np.flatnonzero(execs_of == 0)
    msg_of = np.r_[g, alone]
    rows = from_numpy(first[msg_of])
    send = _flat(s.select(["coll", "obj", "index", "src_pe", "peer_coll", "peer_obj", "peer_pe", "name"])).take(rows)
    n, n_x = len(msg_of), len(matched)
    got = _flat(x.select(["coll", "obj", "index", "pe", "name", "cat"])).take(from_numpy(matched))
    pad = {c.name: pa.nulls(n - n_x, c.type) for c in got.schema}
    got = pa.concat_tables([got, pa.table(pad, schema=got.schema)]) if n > n_x else got
    size, bcast = from_numpy(b_max[msg_of], b_ok[msg_of]), from_numpy(execs_of[msg_of] > 1)
    cols = [*send.columns, pa.chunked_array([size]), *got.columns, pa.chunked_array([bcast])]
    return pa.table(cols, names=list(DELIVERY_COLUMNS))
