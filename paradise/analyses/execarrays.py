"""The exec and send rows of a trace as flat integer numpy arrays, and the exec DAG built from
them (no Python per exec), shared by placement, communication and scheduling.

Three narrow event-level queries (scheduling_execs, scheduling_sends, scheduling_names) are read
once per engine: strings leave DuckDB as 63-bit hashes, turned here into codes into one sorted
list of names, so no array holds a string. Each message is matched to its send once (one hash
lookup on `msg`); the object communication edges (paradise.analyses.msgedges), the object
loads (placement) and the lean exec graph below all derive from that one match. On 10 million
rows (3.3 million execs) this takes seconds and a few hundred MB.

Above REPLAY_MAX_EXECS executions no what-if replay runs, so the full replay graph
(scheduling_exec_graph: per-exec identity strings, object order, untraced causes) is not
needed; the critical path, the message waits and the latency fit use the lean graph.

Matching rules (those of scheduling_exec_graph.sql): a message's send is its earliest send
row; its sending exec is the sending object's latest exec on that PE started at or before the
send, when the send lies within its active time; else the latest exec on the sending PE that
started at or before the send and was still running then.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paradise.analyses.cache import cached
from paradise.whatif.model import ExecSpan

NULL = np.iinfo(np.int64).min
"""A null integer in the event arrays (no PE, object, message or byte count takes this value)."""
EXEC_COLUMNS = ("pe", "t0", "t1", "cost_ns", "msg", "obj", "step", "okey", "reduce_target")
SEND_COLUMNS = ("msg", "pe", "t0", "bytes", "obj", "peer_pe", "peer_obj", "okey")
EXEC_NAMES = ("coll_h", "index_h", "name_h")
SEND_NAMES = ("coll_h", "index_h", "name_h", "peer_coll_h")


@dataclass
class EventArrays:
    """Exec rows (all, in query order) and sends (one per message: its earliest send row) as int64
    arrays keyed by query column name; hashed strings (*_h) become codes into `names` (-1: null),
    other nulls are NULL. x_send: per exec, the position of its message's send, or -1."""

    names: list[str]
    execs: dict[str, np.ndarray]
    sends: dict[str, np.ndarray]
    x_send: np.ndarray


def _col(t: pa.Table, col: str, fill: int = NULL) -> np.ndarray:
    """An Arrow column as int64 numpy, nulls replaced by `fill`."""
    c = t.column(col)
    if c.null_count:
        c = pc.fill_null(c.cast(pa.int64()), fill)
    return np.asarray(c.to_numpy(), dtype=np.int64)


def _arrays(t: pa.Table, ints: tuple[str, ...], hashed: tuple[str, ...], lookup: object) -> dict[str, np.ndarray]:
    """The columns of a query result as int64 arrays, hashed strings as name codes (coll_h ->
    coll). Takes the only reference to `t` and frees each Arrow column once converted, so the
    result and the table are never both whole in memory."""
    out = {}
    for col in ints + hashed:
        v = _col(t, col)
        t = t.drop_columns([col])
        out[col] = v if col in ints else np.asarray(lookup.get_indexer(v), np.int64)  # type: ignore[attr-defined]
    return {(k[:-2] if k in hashed else k): v for k, v in out.items()}


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
    import pandas as pd

    dense = _dense_span(keys)
    if dense is None:
        return bool(pd.Index(keys).is_unique)
    return bool(np.bincount(keys - dense[0], minlength=1).max(initial=0) <= 1)


def positions(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query, the position of the equal key (keys unique), or -1: a table lookup when the
    keys are dense, else a hash lookup."""
    import pandas as pd

    if len(keys) == 0:
        return np.full(len(queries), -1, np.int64)
    dense = _dense_span(keys)
    if dense is None:
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


def load(engine: object) -> EventArrays:
    """The three narrow queries, as arrays, with each exec matched to its message's send."""
    import pandas as pd

    nm = engine.query("scheduling_names")  # type: ignore[attr-defined]
    labels = [str(v) for v in nm.column("label").to_pylist()]
    hashes = _col(nm, "h")
    order = sorted(range(len(labels)), key=labels.__getitem__)  # codes in text order, whatever the engine
    names = [labels[i] for i in order]
    lookup = pd.Index(hashes[order] if len(order) else hashes)
    execs = _arrays(engine.query("scheduling_execs"), EXEC_COLUMNS, EXEC_NAMES, lookup)  # type: ignore[attr-defined]
    sends = _earliest_send(_arrays(engine.query("scheduling_sends"),  # type: ignore[attr-defined]
                                   SEND_COLUMNS, SEND_NAMES, lookup))
    return EventArrays(names=names, execs=execs, sends=sends, x_send=positions(sends["msg"], execs["msg"]))


def event_arrays(engine: object) -> EventArrays:
    """load(engine), once per engine."""
    return cached(engine, "event_arrays", lambda: load(engine))


def _dense(a: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes 0..k-1 for the values of `a` in value order, NULL last, and k: an offset when the
    range is small, else a sorted factorization."""
    import pandas as pd

    if len(a) == 0:
        return a, 1
    null = a == NULL
    has_null = bool(null.any())
    v = a[~null] if has_null else a
    if len(v) == 0:
        return np.zeros(len(a), np.int64), 1
    lo, hi = int(v.min()), int(v.max())
    if hi - lo < 1 << 24:
        return (np.where(null, hi - lo + 1, a - lo) if has_null else a - lo), hi - lo + 2
    codes, uniq = pd.factorize(a, sort=True)
    codes = codes.astype(np.int64)
    if has_null:  # NULL, the least int64, sorted first: move it last
        codes = np.where(null, len(uniq) - 1, codes - 1)
    return codes, len(uniq)


def pack_keys(cols: Iterable[np.ndarray]) -> tuple[np.ndarray, int]:
    """One int64 per row, equal exactly where all key columns are equal and ordered as the rows'
    (last column, ..., first column); and the key's range. `cols` may be a generator: one column
    at a time is held."""
    import pandas as pd

    key = np.zeros(0, np.int64)
    mult = 1
    for i, c in enumerate(cols):
        codes, k = _dense(c)
        del c
        if i == 0:
            key = np.zeros(len(codes), np.int64)
        if mult * k >= 1 << 62:  # re-densify the key so far before it overflows
            key = pd.factorize(key, sort=True)[0].astype(np.int64)
            mult = int(key.max()) + 1 if len(key) else 1
        key = key + codes * mult
        mult *= k
    return key, mult


def group_ids(cols: Iterable[np.ndarray]) -> tuple[np.ndarray, int]:
    """Per row, the id of its group of equal keys (0..n-1), ids in the order of the key values
    (last column first, NULL last), and n: a table lookup when the packed keys span a small
    range, else a hash."""
    import pandas as pd

    key, span = pack_keys(cols)
    if span <= max(4 * len(key), 1 << 20):
        present = np.bincount(key, minlength=span) > 0
        return (np.cumsum(present) - 1)[key], int(present.sum())
    g, uniq = pd.factorize(key, sort=True)
    return g.astype(np.int64), len(uniq)


@dataclass
class LeanGraph(ExecSpan):
    """One row per exec, ordered by (pe, t0, t1); ids are positions. Field names follow
    paradise.whatif.model.ExecGraph where they mean the same, so fit_latency accepts it."""

    pe: np.ndarray
    t0: np.ndarray
    t1: np.ndarray
    cost: np.ndarray
    src: np.ndarray  # sending exec id or -1
    src_pe: np.ndarray  # PE of the send or -1
    send_t0: np.ndarray  # ns, -1 when no message
    nbytes: np.ndarray
    pe_prev: np.ndarray  # previous exec on the PE or -1
    gap: np.ndarray  # ns idle on the PE before this exec
    crit_pred: np.ndarray
    wait_msg: np.ndarray
    coll_code: np.ndarray  # index into coll_names, -1 for none
    name_code: np.ndarray  # index into entry_names, -1 for none
    coll_names: list[str]
    entry_names: list[str]


def _order(pe: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray | None:
    """The permutation sorting by (pe, t0, t1), or None when already sorted (the usual case:
    one file per PE, rows in time order)."""
    if len(pe) < 2:
        return None
    dp, d0, d1 = np.diff(pe), np.diff(t0), np.diff(t1)
    if bool(np.all((dp > 0) | ((dp == 0) & ((d0 > 0) | ((d0 == 0) & (d1 >= 0)))))):
        return None
    return np.lexsort((t1, t0, pe))


def _latest_before(grp: np.ndarray, t: np.ndarray, q_grp: np.ndarray, q_t: np.ndarray) -> np.ndarray:
    """For each query (group, time), the position of the latest row of that group with t <= time
    (rows sorted by (grp, t)), or -1. Packs (group, time) into one int64 key."""
    if len(grp) == 0 or len(q_grp) == 0:
        return np.full(len(q_grp), -1, np.int64)
    tmin = int(min(t.min(), q_t.min()))
    width = int(max(t.max(), q_t.max())) - tmin + 2
    if width * (int(max(grp.max(), q_grp.max())) + 2) >= 2**62:  # packed keys would overflow
        raise ValueError("trace spans too long a time to pack (group, t0) keys")
    k = np.searchsorted(grp * width + (t - tmin), q_grp * width + (q_t - tmin), side="right") - 1
    kk = np.maximum(k, 0)
    return np.where((k >= 0) & (grp[kk] == q_grp), kk, -1)


def _sending_exec(pe: np.ndarray, t0: np.ndarray, t1: np.ndarray, cost: np.ndarray, okey: np.ndarray,
                  s_pe: np.ndarray, s_t0: np.ndarray, s_okey: np.ndarray) -> np.ndarray:
    """For each send, its sending exec id (object rule, else PE rule; see the module doc), or -1."""
    import pandas as pd

    by_pe = _latest_before(pe, t0, s_pe, s_t0)  # execs are sorted by (pe, t0)
    by_pe = np.where((by_pe >= 0) & (s_t0 <= t1[np.maximum(by_pe, 0)]), by_pe, -1)
    # where the PE rule already found an exec of the sending object, the object rule agrees
    # (the latest exec on the PE is the object's latest); only the other sends need it
    bp = np.maximum(by_pe, 0)
    need = (s_okey >= 0) & ~((by_pe >= 0) & (okey[bp] == s_okey))
    if not need.any():
        return by_pe
    sub = np.flatnonzero((okey >= 0) & np.isin(okey, np.unique(s_okey[need])))
    if len(sub) == 0:
        return by_pe
    codes, uniq = pd.factorize(okey[sub])  # object -> dense code; groups are (pe, object)
    grp = pe[sub] * len(uniq) + codes
    s_code = pd.Index(uniq).get_indexer(s_okey)
    s_grp = np.where(need & (s_code >= 0), s_pe * len(uniq) + s_code, -1)
    order = np.lexsort((t0[sub], grp))
    try:
        j = _latest_before(grp[order], t0[sub][order], s_grp, s_t0)
    except ValueError:  # too many (pe, object) groups to pack with the time: the PE rule alone
        return by_pe
    by_obj = np.where(j >= 0, sub[order[np.maximum(j, 0)]], -1)
    ok = (by_obj >= 0) & (s_t0 - t0[np.maximum(by_obj, 0)] <= cost[np.maximum(by_obj, 0)])
    return np.where(ok, by_obj, by_pe)


def build(engine: object) -> LeanGraph:
    """The lean exec graph (execs with an end) from the shared event arrays."""
    ea = event_arrays(engine)
    x, s = ea.execs, ea.sends
    ended = rows_where(x["t1"] != NULL)
    pe, t0, t1 = take(x["pe"], ended), take(x["t0"], ended), take(x["t1"], ended)
    order = _order(pe, t0, t1)
    if order is not None:
        ended = order if ended is None else ended[order]
        pe, t0, t1 = pe[order], t0[order], t1[order]
    cost = take(x["cost_ns"], ended)
    cost = np.maximum(np.where(cost == NULL, 0, cost), 0)
    okey = take(x["okey"], ended)
    okey = np.where(okey == NULL, -1, okey)
    n = len(pe)
    ids = np.arange(n, dtype=np.int64)
    pe_prev = np.where(np.r_[False, pe[1:] == pe[:-1]], ids - 1, -1)
    prev_end = np.where(pe_prev >= 0, (t0 + cost)[np.maximum(pe_prev, 0)], -1)
    s_okey = np.where(s["okey"] == NULL, -1, s["okey"])
    u_src = _sending_exec(pe, t0, t1, cost, okey, s["pe"], s["t0"], s_okey)
    k = take(ea.x_send, ended)
    has = (take(x["msg"], ended) >= 0) & (k >= 0)
    kk = np.maximum(k, 0)
    nb = np.where(s["bytes"] == NULL, 0, s["bytes"])
    pick = (lambda a, fill: np.where(has, a[kk], fill)) if len(s["msg"]) else (lambda a, fill: np.full(n, fill))
    src, src_pe, send_t0, nbytes = pick(u_src, -1), pick(s["pe"], -1), pick(s["t0"], -1), pick(nb, 0)
    binding = (src >= 0) & ((pe_prev < 0) | (send_t0 > prev_end))  # the message came after the PE was free
    crit_pred = np.where(binding & (src != ids), src, pe_prev)
    run_t0 = int(t0.min()) if n else 0
    wait_msg = np.where(binding, np.maximum(t0 - np.where(pe_prev >= 0, prev_end, run_t0), 0), 0)
    gap = np.where(pe_prev >= 0, np.maximum(t0 - prev_end, 0), 0)
    return LeanGraph(pe=pe, t0=t0, t1=t1, cost=cost, src=src, src_pe=src_pe, send_t0=send_t0, nbytes=nbytes,
                     pe_prev=pe_prev, gap=gap, crit_pred=crit_pred, wait_msg=wait_msg, coll_code=take(x["coll"], ended),
                     name_code=take(x["name"], ended), coll_names=ea.names, entry_names=ea.names)


def lean_graph(engine: object) -> LeanGraph:
    """build(engine), once per engine (communication's latency fit and scheduling share it)."""
    return cached(engine, "lean_graph", lambda: build(engine))


def exec_count(engine: object) -> int:
    """Executions with an end (the exec graph's size), from the shared event arrays."""
    return int(np.count_nonzero(event_arrays(engine).execs["t1"] != NULL))


def reduction_targets(engine: object) -> bool:
    """Whether any exec (with coll and t1) could be the target of an inferred reduction (the
    candidate test of communication_reductions.sql): without one that query returns nothing."""
    x = event_arrays(engine).execs
    return bool(np.any((x["reduce_target"] == 1) & (x["coll"] >= 0) & (x["t1"] != NULL)))


def too_large_to_replay(engine: object) -> bool:
    """Above REPLAY_MAX_EXECS no replay runs: the lean arrays replace the replay graph."""
    from paradise.analyses.placement import REPLAY_MAX_EXECS

    return exec_count(engine) > REPLAY_MAX_EXECS


def replayer(engine: object, pes: int | None) -> object:
    """paradise.whatif.load_replayer, once per engine (communication and scheduling share it)."""
    from paradise.whatif import load_replayer

    return cached(engine, "replayer", lambda: load_replayer(engine, pes))


def latency_model(engine: object, pes: int | None) -> object:
    """The fitted message cost: from the lean arrays for traces too large to replay (not
    calibrated: calibration replays, skipped above CALIBRATE_MAX_EXECS anyway), else the replayer's."""
    from paradise.whatif.model import fit_latency

    if too_large_to_replay(engine):
        return cached(engine, "lean_model", lambda: fit_latency(lean_graph(engine)))  # type: ignore[arg-type]
    return replayer(engine, pes).model  # type: ignore[attr-defined]
