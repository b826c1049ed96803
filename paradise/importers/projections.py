"""Charm++ Projections logs (.sts + per-PE .log / .log.gz) -> one paradise Parquet file.

What maps to what is documented in docs/importers.md. Work is columnar per PE file (numpy
over the records of one type); Python loops run over PEs, nesting levels, distinct objects
and the rare text records only.
"""

from __future__ import annotations

import json
import os
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from paradise.engines.summary import SummaryBuilder
from paradise.errors import ImportFormatError, TraceNotFound
from paradise.format import SCHEMA, WRITE_OPTIONS, conform, index_text, make_metadata, pack_index
from paradise.format.summary import SummarizingWriter
from paradise.importers import ProgressCallback, Sources, regular_file, source_paths
from paradise.importers import _projections_parse as P
from paradise.importers._projections_marks import marks_for_pe
from paradise.importers._projections_tachyon import read_tachyon_shifts
from paradise.store.output import atomic_output, check_output

US = 1000
"""Projections times are integer microseconds; paradise times are ns."""
MSG_SHIFT = 32
"""msg = source PE << 32 | event number: the (sender, sequence) pair Projections matches messages on."""


class ProjectionsImportWarning(UserWarning):
    """Records this importer does not know (kept out of the trace, counted once per import)."""


def msg_ids(pe: np.ndarray, event: np.ndarray) -> np.ndarray:
    """Packs (source PE, event number) into the int64 `msg` id."""
    return (pe.astype(np.int64) << MSG_SHIFT) | (event.astype(np.int64) & 0xFFFFFFFF)


def import_trace(
    sources: Sources,
    out: str | os.PathLike,
    *,
    force: bool = False,
    on_progress: ProgressCallback | None = None,
) -> Path:
    """Imports a Projections run (its .sts file or folder, the one source) into OUT; returns OUT."""
    paths = source_paths(sources)
    if len(paths) != 1:
        raise ImportFormatError(f"a Projections import takes one .sts file or folder, got {len(paths)}")
    out = Path(out)
    sts = P.read_sts(find_sts(paths[0]))
    logs = P.find_logs(sts)
    out = check_output(out, force=force, inputs=[sts.path, *(path for _, path in logs)])
    shifts = read_tachyon_shifts(sts.path.parent)
    tables = _EntryTables(sts)
    summary: dict[str, Counter] = {"records": Counter(), "unknown": Counter(), "notes": Counter()}
    parts: dict[str, list[pd.DataFrame]] = {"exec": [], "idle": [], "send": [], "mark": []}
    for done, (pe, path) in enumerate(logs, 1):
        recs = P.read_log(path)
        for kind, frame in _pe_events(recs, pe, sts, tables, shifts.get(pe, 0), summary).items():
            parts[kind].append(frame)
        if on_progress is not None:
            on_progress(done, len(logs))
    frames = {k: pd.concat(v, ignore_index=True) for k, v in parts.items()}
    execs, sends = _link_messages(frames["exec"], frames["send"], summary)
    execs, pieces = fold_pieces(execs)
    summary["notes"]["threaded executions in pieces"] += int(pieces["exec_t0"].nunique()) if len(pieces) else 0
    table = _assemble(execs, sends, frames["idle"], frames["mark"], pieces)
    found = [pe for pe, _ in logs]
    missing = sorted(set(range(sts.worker_pes)) - set(found))
    meta = _metadata(sts, shifts, summary, found, missing)
    _write(table, out, meta)
    if summary["unknown"]:
        names = ", ".join(f"type {t}: {n}" for t, n in sorted(summary["unknown"].items()))
        warnings.warn(ProjectionsImportWarning(f"{sts.path.parent}: skipped unknown Projections records ({names})"),
                      stacklevel=2)
    if missing:
        warnings.warn(ProjectionsImportWarning(
            f"{sts.path}: no log for PE(s) {_pe_list(missing)} of {sts.worker_pes}; the trace is marked incomplete"),
            stacklevel=2)
    return out


def _pe_list(pes: list[int], shown: int = 8) -> str:
    return ", ".join(map(str, pes[:shown])) + (f" and {len(pes) - shown} more" if len(pes) > shown else "")


def find_sts(src: Path) -> Path:
    """The .sts file named, or the one .sts in the folder named."""
    if not src.exists():
        raise TraceNotFound(f"{src}: no such file or directory")
    if src.is_dir():
        found = sorted(p for p in src.glob("*.sts") if not p.name.endswith(".sum.sts"))
        if len(found) != 1:
            what = "no .sts file" if not found else f"{len(found)} .sts files ({', '.join(p.name for p in found)})"
            raise ImportFormatError(f"{src}: {what}; name the run's .sts file")
        return regular_file(found[0], "a Projections .sts file")
    if not src.name.endswith(".sts"):
        raise ImportFormatError(f"{src}: expected a Projections .sts file or its folder")
    return regular_file(src, "a Projections .sts file")


class _EntryTables:
    """Per-entry-point lookup arrays (name, chare name, chare ndims) over the sorted ep ids of the
    .sts; sparse, so that a large entry id costs one row, not a table up to it."""

    def __init__(self, sts: P.Sts) -> None:
        self.ids = np.array(sorted(sts.entries), dtype=np.int64)
        entries = [sts.entries[e] for e in self.ids.tolist()]
        self.name = np.array([name for name, _ in entries], dtype=object)
        chare = [sts.chares.get(c, ("?", -1)) for _, c in entries]
        self.coll = np.array([c[0] for c in chare], dtype=object)
        self.ndims = np.array([c[1] for c in chare], dtype=np.int64)

    def lookup(self, ep: np.ndarray, attr: str, default: object) -> np.ndarray:
        arr = getattr(self, attr)
        ep = np.asarray(ep, dtype=np.int64)
        pos = np.minimum(np.searchsorted(self.ids, ep), max(len(self.ids) - 1, 0))
        ok = (self.ids[pos] == ep) if len(self.ids) else np.zeros(len(ep), dtype=bool)
        out = np.full(len(ep), default, dtype=arr.dtype)
        out[ok] = arr[pos[ok]]
        if attr == "name" and not ok.all():
            out[~ok] = [f"ep {e}" for e in ep[~ok]]
        return out


def pair_nested(pos_b: np.ndarray, pos_e: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Matches begin records to end records on one PE by nesting depth, without a Python stack.

    Returns, per begin: index of its end (-1 if never closed), nesting level (1 = outermost)
    and index of the enclosing begin (-1). Ends with no open begin are ignored.
    """
    nb = len(pos_b)
    pos = np.concatenate([pos_b, pos_e])
    is_b = np.concatenate([np.ones(nb, bool), np.zeros(len(pos_e), bool)])
    idx = np.concatenate([np.arange(nb), np.arange(len(pos_e))])
    order = np.argsort(pos, kind="stable")
    pos, is_b, idx = pos[order], is_b[order], idx[order]
    depth = np.cumsum(np.where(is_b, 1, -1))
    runmin = np.minimum.accumulate(np.minimum(depth, 0)) if len(depth) else depth
    prev_min = np.concatenate([[0], runmin[:-1]]) if len(depth) else depth
    keep = is_b | (depth >= prev_min)  # an end that would go below every earlier depth is an orphan
    level = depth - runmin + np.where(is_b, 0, 1)
    pos, is_b, idx, level = pos[keep], is_b[keep], idx[keep], level[keep]
    o = np.lexsort((pos, level))
    lv, bb, ii = level[o], is_b[o], idx[o]
    pair = bb[:-1] & ~bb[1:] & (lv[:-1] == lv[1:])
    end_of = np.full(nb, -1, dtype=np.int64)
    end_of[ii[:-1][pair]] = ii[1:][pair]
    lvl = np.zeros(nb, dtype=np.int64)
    lvl[idx[is_b]] = level[is_b]
    parent = np.full(nb, -1, dtype=np.int64)
    for L in range(2, int(lvl.max(initial=0)) + 1):
        outer = np.flatnonzero(lvl == L - 1)
        inner = np.flatnonzero(lvl == L)
        j = np.searchsorted(pos_b[outer], pos_b[inner], side="right") - 1
        parent[inner[j >= 0]] = outer[j[j >= 0]]
    return end_of, lvl, parent


def _close_times(recs: P.LogRecords, pos_b: np.ndarray, pe_end: int, times: np.ndarray) -> np.ndarray:
    """Where an unclosed interval ends: the next END_TRACE (tracing switched off) or the PE's end."""
    off = recs.where(P.END_TRACE)
    j = np.searchsorted(off, pos_b, side="right")
    return np.where(j < len(off), times[off[np.minimum(j, len(off) - 1)]] if len(off) else pe_end, pe_end)


def _intervals(recs, b_type, e_type, times, pe_end, min_b=None):
    ib, ie = recs.where(b_type, min_b), recs.where(e_type)
    end_of, lvl, parent = pair_nested(ib, ie)
    closed = end_of >= 0
    t0 = times[ib]
    t1 = np.where(closed, times[ie[np.maximum(end_of, 0)]] if len(ie) else 0, _close_times(recs, ib, pe_end, times))
    return ib, ie, end_of, lvl, parent, t0, t1


def _pe_events(recs: P.LogRecords, pe: int, sts: P.Sts, tables: _EntryTables, shift: int,
               summary: dict[str, Counter]) -> dict[str, pd.DataFrame]:
    types, counts = recs.types, Counter()
    uniq, n = np.unique(types[types >= 0], return_counts=True)
    for t, c in zip(uniq.tolist(), n.tolist()):
        (summary["records"] if t in P.RECORD_NAMES else summary["unknown"])[t] += c
    summary["notes"]["malformed lines"] += recs.malformed
    short = sum(int(np.count_nonzero((types == t) & (recs.lens < k))) for t, k in P.MIN_FIELDS.items())
    summary["notes"]["records with too few fields"] += short
    times = recs.times()
    ends = recs.where(P.END_COMPUTATION)
    pe_end = int(times[ends[-1]]) if len(ends) else int(times.max(initial=0))
    npapi = len(sts.papi)

    ib, ie, end_of, lvl, parent, t0, t1 = _intervals(recs, P.BEGIN_PROCESSING, P.END_PROCESSING, times,
                                                     pe_end, 9 + npapi)
    ep = recs.field(ib, 1)
    counts["unclosed executions"] += int(np.count_nonzero(end_of < 0))
    if len(ie):
        counts["END with another ep than its BEGIN"] += int(np.count_nonzero(
            (end_of >= 0) & (recs.field(ie[np.maximum(end_of, 0)], 1) != ep)))
    dur = t1 - t0
    child = parent >= 0
    active = dur - np.bincount(parent[child], weights=dur[child], minlength=len(ib)).astype(np.int64)
    coll, obj, index, cat = _objects(recs, ib, ep, tables, npapi)
    execs = pd.DataFrame({
        "pe": pe, "t0": (t0 + shift) * US, "t1": (t1 + shift) * US, "active": active * US,
        "ep": ep, "src_pe": recs.field(ib, 4), "event": recs.field(ib, 3), "bytes": recs.field(ib, 5),
        "name": tables.lookup(ep, "name", ""), "coll": coll, "cat": cat, "obj": obj, "index": index,
        "unclosed": end_of < 0, "pos": ib, "level": lvl,
    })
    execs["args"] = _papi_args(recs, ib, ie, end_of, sts) if npapi else None
    execs.loc[execs["unclosed"], "args"] = '{"unclosed":true}'

    ii, _, iend, _, _, i0, i1 = _intervals(recs, P.BEGIN_IDLE, P.END_IDLE, times, pe_end)
    counts["unclosed idle"] += int(np.count_nonzero(iend < 0))
    idles = pd.DataFrame({"pe": pe, "t0": (i0 + shift) * US, "t1": (i1 + shift) * US})

    endpos = np.where(end_of >= 0, ie[np.maximum(end_of, 0)] if len(ie) else 0, np.iinfo(np.int64).max)
    sends = _sends(recs, pe, times, shift, tables, execs, (ib, endpos, parent, int(lvl.max(initial=0))))
    marks = marks_for_pe(recs, pe, sts, times, shift, pe_end)
    spans = _span_marks(recs, pe, times, shift, pe_end)
    if len(spans):
        marks = pd.concat([marks, spans], ignore_index=True) if len(marks) else spans
    for k, v in counts.items():
        summary["notes"][k] += v
    return {"exec": execs, "idle": idles, "send": sends, "mark": marks}


SPAN_RECORDS = ((P.BEGIN_COMPUTATION, P.END_COMPUTATION, "computation"), (P.BEGIN_PACK, P.END_PACK, "pack"),
                (P.BEGIN_UNPACK, P.END_UNPACK, "unpack"))
"""Intervals kept as `mark` rows (cat = name): the PE's traced computation, which its span starts
with, and message packing and unpacking."""


def _span_marks(recs: P.LogRecords, pe: int, times: np.ndarray, shift: int, pe_end: int) -> pd.DataFrame:
    frames = []
    for b, e, name in SPAN_RECORDS:
        ib, _, _, _, _, t0, t1 = _intervals(recs, b, e, times, pe_end)
        if len(ib):
            frames.append(pd.DataFrame({"pe": pe, "t0": (t0 + shift) * US, "t1": (t1 + shift) * US,
                                        "name": name, "cat": name, "args": None}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _objects(recs, ib, ep, tables, npapi):
    """coll, packed obj, index text and chare kind of each execution (arrays: ndims index values)."""
    nid = recs.lens[ib] - 8 - npapi  # fields between recvTime and the trailing cpu time / PAPI values
    ndims = tables.lookup(ep, "ndims", -1)
    is_array = (ndims >= 1) & (nid >= 1)
    coll = tables.lookup(ep, "coll", "?")
    cat = np.where(is_array, "array", "chare").astype(object)
    obj = pd.array([pd.NA] * len(ib), dtype="Int64")
    index = np.full(len(ib), None, dtype=object)
    rows = np.flatnonzero(is_array)
    if len(rows):
        width = int(nid[rows].max())
        ids = np.full((len(rows), width + 1), -1, dtype=np.int64)
        ids[:, 0] = nid[rows]
        for k in range(width):
            has = nid[rows] > k
            ids[has, k + 1] = recs.field(ib[rows[has]], 7 + k)
        uniq, inv = np.unique(ids, axis=0, return_inverse=True)
        texts, packed = [], []
        for u in uniq:  # one iteration per distinct object, not per event
            key = tuple(int(v) for v in u[1: 1 + u[0]])
            texts.append(index_text(key))
            p = pack_index(key)
            packed.append(p if -(1 << 63) <= p < (1 << 63) else None)
        index[rows] = np.array(texts, dtype=object)[inv.ravel()]
        obj[rows] = pd.array(packed, dtype="Int64")[inv.ravel()]
    return coll, obj, index, cat


def _papi_args(recs, ib, ie, end_of, sts) -> np.ndarray:
    """PAPI counter deltas over each execution as JSON text."""
    npapi = len(sts.papi)
    out = np.full(len(ib), None, dtype=object)
    ok = np.flatnonzero(end_of >= 0)
    for k, name in enumerate(sts.papi):
        b = recs.field(ib[ok], recs.lens[ib[ok]] - npapi + k)
        e = recs.field(ie[end_of[ok]], recs.lens[ie[end_of[ok]]] - npapi + k)
        part = np.char.add(f'"{name or k}":', (e - b).astype(str))
        out[ok] = part if k == 0 else np.char.add(np.char.add(out[ok].astype(str), ","), part)
    out[ok] = np.char.add(np.char.add('{"papi":{', out[ok].astype(str)), "}}")
    return out


def _sends(recs, pe, times, shift, tables, execs, nesting) -> pd.DataFrame:
    frames = []
    for rtype in (P.CREATION, P.CREATION_BCAST, P.CREATION_MULTICAST):
        ix = recs.where(rtype)
        if not len(ix):
            continue
        f = pd.DataFrame({
            "pe": pe, "ep": recs.field(ix, 1), "event": recs.field(ix, 3), "bytes": recs.field(ix, 5),
            "t0": (times[ix] + shift) * US, "t1": (times[ix] + recs.field(ix, 6) + shift) * US,
            "rtype": rtype, "pos": ix,
        })
        f["msg"] = msg_ids(np.full(len(ix), pe), f["event"].to_numpy())
        f["name"] = tables.lookup(f["ep"].to_numpy(), "name", "")
        f["cat"] = P.RECORD_NAMES[rtype].lower()
        if rtype == P.CREATION:
            f["args"] = None
        elif rtype == P.CREATION_BCAST:
            f["args"] = np.char.add(np.char.add('{"npes":', recs.field(ix, 7).astype(str)), "}")
        else:
            f["args"] = [json.dumps({"npes": int(n), "dest_pes": recs.flat[s + 8: s + 8 + int(n)].tolist()})
                         for s, n in zip(recs.starts[ix], recs.field(ix, 7))]  # multicasts are few
        frames.append(f)
    if not frames:
        return pd.DataFrame(columns=["pe", "ep", "event", "bytes", "t0", "t1", "rtype", "pos", "msg", "name",
                                     "cat", "args", "coll", "obj", "index"])
    sends = pd.concat(frames, ignore_index=True)
    owner = _enclosing(*nesting, sends["pos"].to_numpy())
    has = owner >= 0
    for col in ("coll", "obj", "index"):
        vals = execs[col].to_numpy()[np.maximum(owner, 0)] if len(execs) else np.full(len(owner), None)
        sends[col] = pd.Series(vals, dtype=execs[col].dtype if len(execs) else object).where(has, None)
    return sends


def _enclosing(pb: np.ndarray, endpos: np.ndarray, parent: np.ndarray, levels: int,
               pos: np.ndarray) -> np.ndarray:
    """Index of the innermost execution running at each record position on this PE (-1: none)."""
    cand = np.searchsorted(pb, pos, side="right") - 1
    for _ in range(levels + 1):  # climb out of executions that ended before the record
        bad = (cand >= 0) & (endpos[np.maximum(cand, 0)] < pos)
        if not bad.any():
            break
        cand[bad] = parent[cand[bad]]
    return cand


def _link_messages(execs: pd.DataFrame, sends: pd.DataFrame, summary) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Sets msg on executions whose creation (same source PE, event and entry point) is in the trace."""
    execs = execs.copy()
    execs["key"] = msg_ids(execs["src_pe"].to_numpy(), execs["event"].to_numpy())
    src = sends[["msg", "ep", "coll", "obj"]].drop_duplicates(["msg", "ep"]).rename(
        columns={"msg": "key", "coll": "peer_coll", "obj": "peer_obj"})
    execs = execs.merge(src, on=["key", "ep"], how="left", indicator=True)
    linked = execs["_merge"].eq("both").to_numpy()
    execs["msg"] = pd.Series(execs["key"], dtype="Int64").where(linked, pd.NA)
    execs["peer_pe"] = execs["src_pe"]
    got = execs[linked].groupby("key").agg(n=("pe", "size"), pe_n=("pe", "nunique"), pe_min=("pe", "min"),
                                          coll_n=("coll", "nunique"), coll_1=("coll", "first"),
                                          obj_n=("obj", "nunique"), obj_1=("obj", "first"))
    sends = sends.merge(got, left_on="msg", right_index=True, how="left")
    p2p = sends["rtype"].eq(P.CREATION) & sends["pe_n"].eq(1)
    sends["peer_pe"] = pd.array(sends["pe_min"].where(p2p), dtype="Int32")
    sends["peer_coll"] = sends["coll_1"].where(sends["coll_n"].eq(1), None)
    sends["peer_obj"] = pd.array(sends["obj_1"].where(p2p & sends["obj_n"].eq(1)), dtype="Int64")
    unlinked = sends["n"].isna()
    summary["notes"]["sends without an execution in the trace"] += int(unlinked.sum())
    summary["notes"]["point-to-point sends without an execution"] += int((unlinked & sends["rtype"].eq(P.CREATION)).sum())
    return execs, sends


PIECE_KEYS = ["pe", "msg", "ep", "coll", "index"]
"""A threaded entry method that suspends is logged as one BEGIN/END_PROCESSING pair per resumed
piece, each naming the message that started it: executions on one PE with the same linked message,
entry point and object are the pieces of one execution (a message is delivered once per object)."""
PIECE_COLS = ["pe", "t0", "t1", "name", "coll", "obj", "index", "msg", "cat", "exec_t0"]


def fold_pieces(execs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(executions, pieces): each group of PIECE_KEYS with several rows becomes one execution (first
    start to last end, active = sum, the first piece's other columns) plus one piece row per pair
    (exec_t0 = the execution's t0); executions without a linked message are never folded."""
    linked = execs[execs["msg"].notna()]
    size = linked.groupby(PIECE_KEYS, dropna=False, sort=False)["t0"].transform("size")
    multi = linked[size.to_numpy() > 1]
    if multi.empty:
        return execs, pd.DataFrame(columns=PIECE_COLS)
    gid = multi.groupby(PIECE_KEYS, dropna=False, sort=False).ngroup().to_numpy()
    multi = multi.assign(gid=gid)
    agg = multi.groupby("gid").agg(t0=("t0", "min"), t1=("t1", "max"), active=("active", "sum"),
                                   unclosed=("unclosed", "any"))
    folded = multi.sort_values(["gid", "t0"], kind="stable").drop_duplicates("gid").set_index("gid")
    for col in ("t1", "active", "unclosed"):
        folded[col] = agg[col]
    folded.loc[folded["unclosed"], "args"] = '{"unclosed":true}'
    pieces = multi.assign(exec_t0=agg["t0"].to_numpy()[gid])[PIECE_COLS]
    rest = execs.drop(index=multi.index)
    return pd.concat([rest, folded.reset_index(drop=True).drop(columns=["gid"], errors="ignore")],
                     ignore_index=True), pieces


_COLS = ("kind", "pe", "t0", "t1", "active", "cat", "coll", "obj", "index", "name", "msg", "peer_pe",
         "peer_coll", "peer_obj", "bytes", "args", "exec_t0")


def _frame_table(df: pd.DataFrame, kind: str) -> pa.Table:
    cols = {"kind": pa.array([kind] * len(df), pa.string())}
    for c in _COLS[1:]:
        if c in df.columns:
            typ = SCHEMA.field(c).type
            base = typ.value_type if pa.types.is_dictionary(typ) else typ
            cols[c] = pa.Array.from_pandas(df[c], type=base)
    return pa.table(cols)


def _assemble(execs, sends, idles, marks, pieces) -> pa.Table:
    parts = [_frame_table(execs, "exec"), _frame_table(sends, "send"), _frame_table(idles, "idle"),
             _frame_table(marks, "mark"), _frame_table(pieces, "piece")]
    table = pa.concat_tables([conform(t) for t in parts if t.num_rows], promote_options="default") \
        if any(t.num_rows for t in parts) else SCHEMA.empty_table()
    return table.sort_by([("pe", "ascending"), ("t0", "ascending")]).combine_chunks()


def _metadata(sts: P.Sts, shifts: dict[int, int], summary, pes: list[int], missing: list[int]) -> dict[bytes, bytes]:
    extra = {
        "projections_version": sts.version, "machine": sts.machine, "smp": list(sts.smp) if sts.smp else None,
        **sts.provenance,
        "records": {P.RECORD_NAMES[t]: n for t, n in sorted(summary["records"].items())},
        "skipped": {P.RECORD_NAMES[t]: n for t, n in sorted(summary["records"].items()) if t in P.SKIPPED_TYPES},
        "unknown_records": {str(t): n for t, n in sorted(summary["unknown"].items())},
        "notes": {k: v for k, v in sorted(summary["notes"].items()) if v},
        "log_pes": pes,
        "missing_pes": missing,
        "tachyon_shifts_us": {str(k): v for k, v in sorted(shifts.items())},
    }
    names = {"user_events": {str(k): v for k, v in sorted(sts.events.items())},
             "user_stats": {str(k): v for k, v in sorted(sts.stats.items())}, "papi": sts.papi}
    clock = {"method": "projections+tachyon_shifts" if shifts else "projections", "residual_ns": None}
    return make_metadata(source="projections", program=sts.program, pes=sts.worker_pes, pe=None,
                         complete=not missing, clock=clock, names=names, extra=extra)


def _write(table: pa.Table, out: Path, meta: dict[bytes, bytes]) -> None:
    with atomic_output(out) as (_, fh):
        with SummarizingWriter(fh, table.schema.with_metadata(meta), SummaryBuilder(), **WRITE_OPTIONS) as writer:
            writer.write_table(table.replace_schema_metadata(meta), row_group_size=1 << 20)
