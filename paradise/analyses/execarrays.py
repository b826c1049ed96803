"""The exec DAG of a trace too large to replay, as flat numpy arrays (no Python per exec).

Above REPLAY_MAX_EXECS executions no what-if replay runs, so the full replay graph
(scheduling_exec_graph: per-exec identity strings, object order, untraced causes) is not
needed; the critical path, the message waits and the latency fit need only integers. Two
narrow event-level queries (scheduling_execs, scheduling_sends) are matched here with sorts
and binary searches: on 10 million rows (3.3 million execs) this takes seconds and a few
hundred MB, where the SQL exec graph took 40 s and 5 GB.

Matching rules (those of scheduling_exec_graph.sql): a message's send is its earliest send
row; its sending exec is the sending object's latest exec on that PE started at or before the
send, when the send lies within its active time; else the latest exec on the sending PE that
started at or before the send and was still running then.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paradise.analyses.cache import cached
from paradise.whatif.model import ExecSpan, int_column


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


_ints = int_column


def _codes(t: pa.Table, col: str) -> tuple[np.ndarray, list[str]]:
    arr = t.column(col)
    if not pa.types.is_dictionary(arr.type):
        arr = pc.dictionary_encode(arr)
    arr = arr.unify_dictionaries() if isinstance(arr, pa.ChunkedArray) else arr
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    if not chunks:
        return np.zeros(0, np.int64), []
    codes = np.concatenate([pc.fill_null(c.indices.cast(pa.int64()), -1).to_numpy(zero_copy_only=False)
                            for c in chunks])
    return codes.astype(np.int64), [str(v) for v in chunks[0].dictionary.to_pylist()]


def _order(pe: np.ndarray, t0: np.ndarray, t1: np.ndarray) -> np.ndarray | None:
    """The permutation sorting by (pe, t0, t1), or None when already sorted (the usual case:
    one file per PE, rows in time order)."""
    if len(pe) < 2:
        return None
    dp, d0, d1 = np.diff(pe), np.diff(t0), np.diff(t1)
    if bool(np.all((dp > 0) | ((dp == 0) & ((d0 > 0) | ((d0 == 0) & (d1 >= 0)))))):
        return None
    return np.lexsort((t1, t0, pe))


def _sends(engine: object) -> tuple[np.ndarray, ...]:
    """Per distinct msg: sending PE, time and object key (its earliest send row), max bytes;
    unsorted when every msg has one send row (the usual case: no sort, the lookup is a hash)."""
    import pandas as pd

    s = engine.query("scheduling_sends")  # type: ignore[attr-defined]
    msg, pe, t0, nb, ok = (_ints(s, "msg"), _ints(s, "pe"), _ints(s, "t0", 0), _ints(s, "bytes", 0),
                           _ints(s, "okey"))
    del s
    if pd.Index(msg).is_unique:
        return msg, pe, t0, nb, ok
    order = np.lexsort((t0, msg))
    msg, pe, t0, nb, ok = msg[order], pe[order], t0[order], nb[order], ok[order]
    first = np.flatnonzero(np.r_[True, msg[1:] != msg[:-1]])
    return msg[first], pe[first], t0[first], np.maximum.reduceat(nb, first), ok[first]


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
    """The lean exec graph from the two narrow queries."""
    import pandas as pd

    ex = engine.query("scheduling_execs")  # type: ignore[attr-defined]
    pe, t0, t1 = _ints(ex, "pe"), _ints(ex, "t0", 0), _ints(ex, "t1", 0)
    cost, msg = np.maximum(_ints(ex, "cost_ns", 0), 0), _ints(ex, "msg")
    coll, coll_names = _codes(ex, "coll")
    name, entry_names = _codes(ex, "name")
    okey = _ints(ex, "okey")
    del ex
    order = _order(pe, t0, t1)
    if order is not None:
        pe, t0, t1, cost, msg, coll, name, okey = (a[order] for a in (pe, t0, t1, cost, msg, coll, name, okey))
    n = len(pe)
    ids = np.arange(n, dtype=np.int64)
    pe_prev = np.where(np.r_[False, pe[1:] == pe[:-1]], ids - 1, -1)
    prev_end = np.where(pe_prev >= 0, (t0 + cost)[np.maximum(pe_prev, 0)], -1)
    u_msg, u_pe, u_t0, u_bytes, u_okey = _sends(engine)
    u_src = _sending_exec(pe, t0, t1, cost, okey, u_pe, u_t0, u_okey)
    k = pd.Index(u_msg).get_indexer(msg)  # hash lookup of each exec's message (-1: untraced)
    has = (msg >= 0) & (k >= 0)
    kk = np.maximum(k, 0)
    pick = (lambda a, fill: np.where(has, a[kk], fill)) if len(u_msg) else (lambda a, fill: np.full(n, fill))
    src, src_pe, send_t0, nbytes = pick(u_src, -1), pick(u_pe, -1), pick(u_t0, -1), pick(u_bytes, 0)
    binding = (src >= 0) & ((pe_prev < 0) | (send_t0 > prev_end))  # the message came after the PE was free
    crit_pred = np.where(binding & (src != ids), src, pe_prev)
    run_t0 = int(t0.min()) if n else 0
    wait_msg = np.where(binding, np.maximum(t0 - np.where(pe_prev >= 0, prev_end, run_t0), 0), 0)
    gap = np.where(pe_prev >= 0, np.maximum(t0 - prev_end, 0), 0)
    return LeanGraph(pe=pe, t0=t0, t1=t1, cost=cost, src=src, src_pe=src_pe, send_t0=send_t0, nbytes=nbytes,
                     pe_prev=pe_prev, gap=gap, crit_pred=crit_pred, wait_msg=wait_msg, coll_code=coll,
                     name_code=name, coll_names=coll_names, entry_names=entry_names)


def lean_graph(engine: object) -> LeanGraph:
    """build(engine), once per engine (communication's latency fit and scheduling share it)."""
    return cached(engine, "lean_graph", lambda: build(engine))


def exec_count(engine: object) -> int:
    """Executions with an end (the exec graph's size), from the cached placement_pe_load."""
    from paradise.analyses.cache import cached_query

    t = cached_query(engine, "placement_pe_load")
    return int(pc.sum(t.column("execs")).as_py() or 0) if t.num_rows else 0


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
