"""Projections user events, user-event pairs, user stats and notes -> paradise `mark` rows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from paradise.importers import _projections_parse as P

US = 1000


def _event_names(sts: P.Sts, ids: np.ndarray) -> np.ndarray:
    return np.array([sts.events.get(int(i), f"user event {int(i)}") for i in ids], dtype=object)


def _json_ints(**cols: np.ndarray) -> np.ndarray:
    """'{"k":v,...}' per row, built column-wise with numpy string ops."""
    out = None
    for i, (k, v) in enumerate(cols.items()):
        part = np.char.add(("{" if i == 0 else ",") + f'"{k}":', np.asarray(v).astype(np.int64).astype(str))
        out = part if out is None else np.char.add(out, part)
    return np.char.add(out, "}").astype(object)


def _frame(pe, t0, t1, names, cat, args) -> pd.DataFrame:
    return pd.DataFrame({"pe": pe, "t0": np.asarray(t0, np.int64), "t1": pd.array(t1, dtype="Int64"),
                         "name": names, "cat": cat, "args": args})


def _fifo_pairs(keys: np.ndarray, pos_b: np.ndarray, pos_e: np.ndarray, keys_e: np.ndarray):
    """k-th begin of a key pairs with its k-th end (Projections pairs the oldest open begin)."""
    b = pd.DataFrame({"key": keys, "pos": pos_b}).sort_values("pos")
    e = pd.DataFrame({"key": keys_e, "epos": pos_e}).sort_values("epos")
    b["k"] = b.groupby("key").cumcount()
    e["k"] = e.groupby("key").cumcount()
    m = b.merge(e, on=["key", "k"], how="left")
    m.loc[m["epos"] < m["pos"], "epos"] = np.nan
    return m


def marks_for_pe(recs: P.LogRecords, pe: int, sts: P.Sts, times: np.ndarray, shift: int,
                 pe_end: int) -> pd.DataFrame:
    """All mark rows of one PE (times already in µs; shifted and converted to ns here)."""
    frames = []
    ue = recs.where(P.USER_EVENT)
    if len(ue):
        ids = recs.field(ue, 0)
        frames.append(_frame(pe, times[ue], [None] * len(ue), _event_names(sts, ids), "user_event",
                             _json_ints(event_id=ids)))
    frames.append(_bracket_pairs(recs, pe, sts, times))
    frames.append(_user_pairs(recs, pe, sts, times))
    us = recs.where(P.USER_SUPPLIED)
    if len(us):
        known = np.where(recs.lens[us] >= 2, times[us], -1)
        prev = np.maximum.accumulate(np.where(times >= 0, times, 0))  # a value-only record: time of the one before
        t = np.where(known >= 0, known, prev[np.maximum(us - 1, 0)])
        frames.append(_frame(pe, t, [None] * len(us), "user supplied", "user_supplied",
                             _json_ints(value=recs.field(us, 0))))
    mem = recs.where(P.MEMORY_USAGE)
    if len(mem):
        frames.append(_frame(pe, times[mem], [None] * len(mem), "memory usage", "memory_usage",
                             _json_ints(bytes=recs.field(mem, 0))))
    ph = recs.where(P.END_PHASE)
    if len(ph):
        frames.append(_frame(pe, times[ph], [None] * len(ph), "end of phase", "end_phase",
                             _json_ints(phase=recs.field(ph, 0))))
    off, on = recs.where(P.END_TRACE), recs.where(P.BEGIN_TRACE)
    if len(off):
        j = np.searchsorted(on, off)
        t1 = np.where(j < len(on), times[on[np.minimum(j, max(len(on) - 1, 0))]] if len(on) else pe_end, pe_end)
        frames.append(_frame(pe, times[off], t1, "tracing off", "trace_gap", None))
    frames.append(_text_marks(recs, pe, sts))
    frames = [f for f in frames if f is not None and len(f)]
    if not frames:
        return _frame(pe, [], [], [], [], [])
    out = pd.concat(frames, ignore_index=True)
    out["t0"] = (out["t0"] + shift) * US
    out["t1"] = (out["t1"] + shift) * US
    return out


def _bracket_pairs(recs, pe, sts, times):
    """USER_EVENT_PAIR (100): two records with the same event number, begin then end."""
    ix = recs.where(P.USER_EVENT_PAIR)
    if not len(ix):
        return None
    df = pd.DataFrame({"id": recs.field(ix, 0), "ev": recs.field(ix, 2), "pos": ix}).sort_values("pos")
    df["k"] = df.groupby(["id", "ev"]).cumcount()
    b, e = df[df["k"] % 2 == 0], df[df["k"] % 2 == 1].assign(k=lambda d: d["k"] - 1)
    m = b.merge(e[["id", "ev", "k", "pos"]], on=["id", "ev", "k"], how="left", suffixes=("", "_e"))
    ends = m["pos_e"].to_numpy()
    t1 = [times[int(p)] if p == p else None for p in ends]  # NaN: never closed
    nested = np.where(recs.lens[m["pos"]] >= 5, recs.field(m["pos"].to_numpy(), 4), 0)
    return _frame(pe, times[m["pos"].to_numpy()], t1, _event_names(sts, m["id"].to_numpy()), "user_event_pair",
                  _json_ints(event_id=m["id"].to_numpy(), nested_id=nested))


def _user_pairs(recs, pe, sts, times):
    """BEGIN/END_USER_EVENT_PAIR (98/99), paired per (event id, nested id) oldest first."""
    ib, ie = recs.where(P.BEGIN_USER_EVENT_PAIR), recs.where(P.END_USER_EVENT_PAIR)
    if not len(ib):
        return None

    def key(ix):
        nested = np.where(recs.lens[ix] >= 5, recs.field(ix, 4), 0) if len(ix) else np.zeros(0, np.int64)
        return recs.field(ix, 0) * (1 << 32) + nested, nested

    kb, nested_b = key(ib)
    ke, _ = key(ie)
    m = _fifo_pairs(kb, ib, ie, ke)
    t1 = [times[int(p)] if p == p else None for p in m["epos"].to_numpy()]
    ids = m["key"].to_numpy() >> 32
    nested = m["key"].to_numpy() & 0xFFFFFFFF
    return _frame(pe, times[m["pos"].to_numpy()], t1, _event_names(sts, ids), "user_event_pair",
                  _json_ints(event_id=ids, nested_id=nested))


def _text_marks(recs, pe, sts):
    """USER_STAT (floats) and notes (text): few records, parsed line by line."""
    rows = []
    for _pos, rtype, line in recs.text:
        toks = line.split()
        try:
            if rtype == P.USER_STAT and len(toks) >= 6:
                sid = int(toks[5])
                rows.append((int(toks[1]), None, sts.stats.get(sid, f"user stat {sid}"), "user_stat",
                             json.dumps({"stat_id": sid, "value": float(toks[3]), "user_time": float(toks[2])})))
            elif rtype == P.USER_SUPPLIED_NOTE and len(toks) >= 3:
                head = line.split(" ", 3)
                text = head[3][: int(head[2])] if len(head) > 3 else ""
                rows.append((int(toks[1]), None, "note", "note", json.dumps({"text": text})))
            elif rtype == P.USER_SUPPLIED_BRACKETED_NOTE and len(toks) >= 5:
                head = line.split(" ", 5)
                eid = int(head[3])
                text = head[5][: int(head[4])] if len(head) > 5 else ""
                rows.append((int(head[1]), int(head[2]), sts.events.get(eid, f"user event {eid}"), "note",
                             json.dumps({"event_id": eid, "text": text})))
        except ValueError:
            continue
    if not rows:
        return None
    t0, t1, names, cats, args = zip(*rows)
    return _frame(pe, list(t0), list(t1), list(names), list(cats), list(args))
