"""Turns the rows of each Nsight Systems event table into paradise rows, one batch at a time.

Every table row becomes exactly one paradise row (so counts and summed durations can be checked
against the export table by table); the mapping is docs/importers.md ("Nsight Systems"). Names come
from the string table once per distinct id per batch, categories and kinds are chosen once per
distinct value, and every other column is a numpy operation over the batch.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
from pyarrow._compute import call_function

from paradise.format import SCHEMA
from paradise.format.arrays import nulls
from paradise.importers.kineto_arrow import from_numpy, strings
from paradise.importers.nsys_arrow import (
    cast,
    choose,
    decode,
    dictionary,
    encode,
    int32_stream,
    json_args,
    json_int,
    json_str,
    per_value,
    unique_inverse,
)
from paradise.importers.nsys_sqlite import Export

MSG_RANK_SHIFT = 1 << 40
"""msg = rank * 2**40 + correlation id, as the Kineto importer packs it (CUPTI ids are 32-bit)."""
PID_SHIFT, ID_MASK = 24, 0xFFFFFF
"""A serialized GlobalId holds the OS pid at bits 24-47 and the OS tid at bits 0-23."""

COPY_KINDS = {0: "Unknown", 1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
              8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "UVM HtoD", 12: "UVM DtoH", 13: "UVM DtoD"}
"""CUpti_ActivityMemcpyKind, short names as Kineto writes them (`Memcpy HtoD (Pinned -> Device)`)."""
MEMORY_KINDS = {0: "Unknown", 1: "Pageable", 2: "Pinned", 3: "Device", 4: "Array", 5: "Managed",
                6: "Device Static", 7: "Managed Static"}
"""CUpti_ActivityMemoryKind (the 2.x exports carry no ENUM tables, so the constants live here)."""
SYNC_NAMES = {0: "Unknown Sync", 1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync", 4: "Context Sync"}
"""CUpti_ActivitySynchronizationType, named as Kineto names its cuda_sync rows."""
API_CATS = {0: "cuda_runtime", 1: "cuda_driver"}
"""CUPTI_ACTIVITY_KIND_RUNTIME.eventClass -> cat; other classes are `cuda_api`."""
BACKTRACE_CLASS = 67
"""eventClass of CUDA backtrace rows: a second, slightly wider row around a call that has a
callchain (same correlation id): kept as a `mark`, never as a second launch."""
NVTX_RANGES = (59, 60, 70, 71)
"""NVTX push/pop and start/end ranges (and the NVTXT variants): intervals."""
NVTX_MARKS = (34, 65)
NVTX_ROWS = NVTX_RANGES + NVTX_MARKS
NVTX_THREAD_NAME, NVTX_DOMAIN_CREATE = 39, 75
MPI_DOMAIN = "MPI"
"""NVTX domain under which `nsys --trace=mpi` (before MPI tables existed) records MPI calls."""
OP_RE = re.compile(r"^([A-Za-z_][\w.]*::[\w.]+)(?:, (?:seq|op_id|sizes|input_op_ids) = .*)?$")
"""PyTorch `emit_nvtx` op ranges (`aten::mm, seq = 12, sizes = [...]`): CPU ops named by their op."""

ROW_SCHEMA = pa.schema([f for f in SCHEMA if f.name in ("kind", "pe", "t0", "t1", "tid", "cat", "name", "msg",
                                                         "peer_pe", "bytes", "step", "stream", "args")])
"""The columns Nsight rows fill, in the format's types and order: what is sorted and spilled (the
format's other columns are null in every row and are added when the rows are written)."""

MPI_ARG_COLUMNS = ("size", "recvSize", "remoteRank", "rootRank", "tag", "commHandle", "requestHandle")


class PidNotSurveyed(Exception):
    """A row of a process the survey did not find, where it guessed the pids of CPU tables from
    their first rows (the caller surveys the file again, scanning for them)."""


@dataclass
class Context:
    """What the batches of one file need: ranks, the time shift, steps and the string cache."""

    exp: Export
    pids: np.ndarray
    """Traced OS pids, sorted; ranks[i] is the rank of pids[i]."""
    ranks: np.ndarray
    shift: int
    step_re: re.Pattern
    steps: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=dict)
    """Per rank: step starts, ends, numbers (on the export's clock), sorted by start."""
    launch_msg: np.ndarray | None = None
    """The msg of every launch (runtime call with a correlation id), sorted; launch_step: its step."""
    launch_step: np.ndarray | None = None
    domains: dict[int, str] = field(default_factory=dict)
    guessed: bool = False
    """Whether `pids` were guessed (see nsys._survey): a row of another process raises PidNotSurveyed."""
    devices: dict[str, list[tuple]] = field(default_factory=dict)
    """Per device table, its (pid, deviceId) pairs as surveyed; where guessed, a row of another
    pair raises PidNotSurveyed."""
    _names: dict[int, str | None] = field(default_factory=dict)

    def rank(self, gid: np.ndarray) -> np.ndarray:
        """The rank of each row from its serialized global pid/tid (the file's first for a NULL id,
        read as -1, or a process the survey did not find)."""
        pid = (gid >> PID_SHIFT) & ID_MASK
        pos = np.clip(np.searchsorted(self.pids, pid), 0, self.pids.size - 1)
        found = self.pids[pos] == pid
        if self.guessed and not bool(found.all()):  # a NULL id too: the scanning survey decides
            raise PidNotSurveyed
        return np.where(found, self.ranks[pos], self.ranks[0]).astype(np.int32)

    def device_rank(self, table: str, gpid: np.ndarray, dev: np.ndarray) -> np.ndarray:
        """rank() of device rows, whose (pid, deviceId) pairs, where guessed, are checked too."""
        if self.guessed:
            pid = (gpid >> PID_SHIFT) & ID_MASK
            ok = np.zeros(pid.size, dtype=np.bool_)
            for p, d in self.devices.get(table, []):
                if p is not None and d is not None:
                    ok |= (pid == p) & (dev == d)
            if not bool(ok.all()):
                raise PidNotSurveyed
        return self.rank(gpid)

    def names(self, ids: np.ndarray) -> pa.DictionaryArray:
        """StringIds values for the ids (-1: null), fetched once per distinct id."""
        uniq, inv = unique_inverse(ids)
        missing = [int(u) for u in uniq if int(u) not in self._names]
        for i in range(0, len(missing), 500):
            chunk = missing[i:i + 500]
            found = dict(self.exp.query(f"SELECT id, value FROM StringIds WHERE id IN ({','.join('?' * len(chunk))})",
                                        tuple(chunk)))
            self._names.update({u: found.get(u) for u in chunk})
        values = [self._names[int(u)] for u in uniq]
        return dictionary(values, inv)


def build(ctx: Context, n: int, *, kind: str | pa.Array, pe: np.ndarray, start: np.ndarray, end: np.ndarray,
          end_ok: np.ndarray | None = None, cat: pa.Array | str, name: pa.Array, tid: np.ndarray | None = None,
          corr: np.ndarray | None = None, nbytes: np.ndarray | None = None, stream: np.ndarray | None = None,
          step: tuple[np.ndarray, np.ndarray] | None = None, args: pa.Array | None = None,
          peer: np.ndarray | None = None) -> pa.Table:
    """One batch of paradise rows; t0/t1 shifted onto the trace clock, msg packed with the rank."""
    cols: dict[str, pa.Array] = {
        "kind": _const_or(kind, n), "pe": from_numpy(pe), "t0": from_numpy(start + ctx.shift),
        "t1": from_numpy(end + ctx.shift, end_ok), "cat": _const_or(cat, n), "name": name,
    }
    if tid is not None:
        cols["tid"] = from_numpy(tid)
    if corr is not None:
        linked = (corr > 0) & (corr < MSG_RANK_SHIFT)
        cols["msg"] = from_numpy(np.where(linked, pe.astype(np.int64) * MSG_RANK_SHIFT + corr, 0), linked)
    if nbytes is not None:
        cols["bytes"] = from_numpy(nbytes, nbytes >= 0)
    if stream is not None:
        cols["stream"] = from_numpy(stream)
    if step is not None:
        cols["step"] = from_numpy(step[0].astype(np.int32), step[1])
    if args is not None:
        cols["args"] = args
    if peer is not None:
        cols["peer_pe"] = from_numpy(peer.astype(np.int32), peer >= 0)
    return pa.Table.from_arrays([_typed(cols[f.name], f.type) if f.name in cols else nulls(n, f.type)
                                 for f in ROW_SCHEMA], schema=ROW_SCHEMA)


def _typed(col: pa.Array, typ: pa.DataType) -> pa.Array:
    return col if col.type == typ else cast(col, typ)


def _const_or(value: str | pa.Array, n: int) -> pa.Array:
    if isinstance(value, str):
        return pa.DictionaryArray.from_arrays(from_numpy(np.zeros(n, dtype=np.int32)), strings([value]))
    return value


# --- steps -----------------------------------------------------------------------------------------------


def cpu_steps(ctx: Context, pe: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step of the interval ([start, end)) each CPU-side row starts in, on its rank."""
    vals = np.zeros(t.size, dtype=np.int64)
    ok = np.zeros(t.size, dtype=np.bool_)
    for r, (s0, s1, num) in ctx.steps.items():
        rows = np.flatnonzero(pe == r)
        if rows.size == 0 or s0.size == 0:
            continue
        idx = np.searchsorted(s0, t[rows], side="right") - 1
        hit = (idx >= 0) & (t[rows] < s1[np.clip(idx, 0, None)])
        vals[rows] = num[np.clip(idx, 0, None)]
        ok[rows] = hit
    return vals, ok


def device_steps(ctx: Context, msg: np.ndarray, has: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step of each device row: that of the runtime call with the same msg (its launch)."""
    vals = np.zeros(msg.size, dtype=np.int64)
    ok = np.zeros(msg.size, dtype=np.bool_)
    if ctx.launch_msg is None or ctx.launch_step is None:
        return vals, ok
    m, s = ctx.launch_msg, ctx.launch_step
    pos = np.clip(np.searchsorted(m, msg), 0, max(m.size - 1, 0))
    hit = has & (m.size > 0) & (m[pos] == msg) & (s[pos] >= 0)
    vals[hit] = s[pos][hit]
    ok[hit] = True
    return vals, ok


def collect_launch_steps(ctx: Context) -> None:
    """The step of every launch, read before any row (one scan of the runtime calls' start, class,
    thread and correlation id), so that device rows, read beside the runtime calls, take theirs."""
    if not ctx.steps or not ctx.exp.has("CUPTI_ACTIVITY_KIND_RUNTIME"):
        return
    msgs, steps = [], []
    for start, cls, gid, corr in ctx.exp.int_columns(
            "CUPTI_ACTIVITY_KIND_RUNTIME", ["start", "eventClass", "globalTid", "ifnull(correlationId, 0)"], times=1):
        pe = ctx.rank(gid)
        link = np.where(cls == BACKTRACE_CLASS, 0, corr)
        keep = link > 0
        step = cpu_steps(ctx, pe[keep], start[keep])
        msgs.append(pe[keep].astype(np.int64) * MSG_RANK_SHIFT + link[keep])
        steps.append(np.where(step[1], step[0], -1))
    m = np.concatenate(msgs) if msgs else np.zeros(0, dtype=np.int64)
    order = np.argsort(m, kind="stable")
    ctx.launch_msg, ctx.launch_step = m[order], (np.concatenate(steps) if steps else m)[order]


def collect_steps(ctx: Context) -> None:
    """Step intervals from NVTX ranges whose text matches the step pattern (one pass, batched)."""
    if not ctx.exp.has("NVTX_EVENTS"):
        return
    found: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    for (start, end, gid, text_id), text in ctx.exp.text_columns(
            "NVTX_EVENTS", ["start", "end", "globalTid", "textId"], "text",
            f"eventType IN {NVTX_RANGES} AND end IS NOT NULL"):
        names = nvtx_names(ctx, text, text_id)
        num = per_value(names, lambda v: _step_number(ctx.step_re, v), dtype=np.int64, null=-1)
        hit = num >= 0
        if not hit.any():
            continue
        pe = ctx.rank(gid)
        for r in np.unique(pe[hit]):
            m = hit & (pe == r)
            found.setdefault(int(r), []).append((start[m], end[m], num[m]))
    for r, parts in found.items():
        s0, s1, num = (np.concatenate([p[i] for p in parts]) for i in range(3))
        order = np.argsort(s0, kind="stable")
        ctx.steps[r] = (s0[order], s1[order], num[order])


def _step_number(step_re: re.Pattern, name: str | None) -> int:
    m = step_re.fullmatch(name) if name else None
    if m is None:
        return -1
    digits = m.group(1)
    return int(digits) if len(digits) <= 10 and int(digits) < 2**31 else -1


def _op_name(name: str | None) -> str:
    """The op a PyTorch `emit_nvtx` range is of (`aten::mm, seq = 12, ...` -> aten::mm), else ""."""
    m = OP_RE.match(name) if name else None
    return m.group(1) if m else ""


def nvtx_names(ctx: Context, text: pa.Array, text_id: np.ndarray) -> pa.Array:
    """NVTX texts: the row's own text, else its registered string (StringIds via textId)."""
    registered = ctx.names(text_id)
    if text.null_count == len(text):
        return registered
    return encode(call_function("coalesce", [text, decode(registered)]))


# --- tables ------------------------------------------------------------------------------------------------


def runtime_rows(ctx: Context) -> Iterator[pa.Table]:
    """CUPTI_ACTIVITY_KIND_RUNTIME: CUDA runtime/driver calls on their thread (launches carry msg)."""
    ret = "returnValue" if "returnValue" in ctx.exp.tables["CUPTI_ACTIVITY_KIND_RUNTIME"] else "0"
    exprs = ["start", "end", "eventClass", "globalTid", "ifnull(correlationId, 0)", "nameId", ret]
    for start, end, cls, gid, corr, name_id, rv in ctx.exp.int_columns("CUPTI_ACTIVITY_KIND_RUNTIME", exprs):
        pe, n = ctx.rank(gid), start.size
        backtrace = cls == BACKTRACE_CLASS
        link = np.where(backtrace, 0, corr)
        step = cpu_steps(ctx, pe, start)
        classes, inv = unique_inverse(cls)
        cat = choose([API_CATS.get(int(c), "cuda_api") for c in classes] + ["cuda_backtrace"],
                     np.where(backtrace, classes.size, inv))
        args = json_args([("correlation", json_int(corr, corr > 0))], tail=[("return", [rv])])
        yield build(ctx, n, kind=choose(["exec", "mark"], backtrace), pe=pe, start=start, end=end,
                    cat=cat, name=ctx.names(name_id), tid=gid & ID_MASK, corr=link, step=step, args=args)


def kernel_rows(ctx: Context) -> Iterator[pa.Table]:
    """CUPTI_ACTIVITY_KIND_KERNEL: one exec (collective for NCCL/RCCL kernels) on its stream."""
    exprs = ["start", "end", "deviceId", "streamId", "ifnull(correlationId, 0)", "globalPid", "demangledName",
             "shortName", "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread",
             "staticSharedMemory + dynamicSharedMemory"]
    for c in ctx.exp.int_columns("CUPTI_ACTIVITY_KIND_KERNEL", exprs):
        start, end, dev, stream, corr, gpid = c[:6]
        pe, n = ctx.device_rank("CUPTI_ACTIVITY_KIND_KERNEL", gpid, dev), start.size
        name = ctx.names(c[6])
        coll = per_value(name, lambda v: bool(v) and v.lower().startswith(("nccl", "rccl")), dtype=np.bool_,
                         null=False)
        args = json_args([("correlation", json_int(corr, corr > 0))],
                         tail=[("device", [dev]), ("grid", c[8:11]), ("block", c[11:14]), ("registers", [c[14]]),
                               ("shared_memory", [c[15]]), ("short_name", [ctx.names(c[7])])])
        s = int32_stream(stream)
        msg = pe.astype(np.int64) * MSG_RANK_SHIFT + corr
        yield build(ctx, n, kind=choose(["exec", "collective"], coll), pe=pe, start=start, end=end,
                    cat="kernel", name=name, tid=s.astype(np.int64), corr=corr, stream=s,
                    step=device_steps(ctx, msg, corr > 0), args=args)


def memcpy_rows(ctx: Context) -> Iterator[pa.Table]:
    """CUPTI_ACTIVITY_KIND_MEMCPY: one exec `Memcpy HtoD (Pinned -> Device)` with its bytes."""
    cols = ctx.exp.tables["CUPTI_ACTIVITY_KIND_MEMCPY"]
    src = "ifnull(srcKind, 7)" if "srcKind" in cols else "7"
    dst = "ifnull(dstKind, 7)" if "dstKind" in cols else "7"
    exprs = ["start", "end", "deviceId", "streamId", "ifnull(correlationId, 0)", "globalPid", "bytes", "copyKind",
             src, dst]
    for start, end, dev, stream, corr, gpid, nbytes, kind, sk, dk in ctx.exp.int_columns(
            "CUPTI_ACTIVITY_KIND_MEMCPY", exprs):
        key = kind * 10_000 + sk * 100 + dk
        uniq, inv = unique_inverse(key)
        names = [f"Memcpy {COPY_KINDS.get(int(k) // 10_000, 'Unknown')} "
                 f"({MEMORY_KINDS.get(int(k) // 100 % 100, 'Unknown')} -> {MEMORY_KINDS.get(int(k) % 100, 'Unknown')})"
                 for k in uniq]
        yield _device_copy(ctx, "CUPTI_ACTIVITY_KIND_MEMCPY", start, end, dev, stream, corr, gpid, nbytes, "gpu_memcpy", dictionary(names, inv),
                           [("copy_kind", [kind])])


def memset_rows(ctx: Context) -> Iterator[pa.Table]:
    """CUPTI_ACTIVITY_KIND_MEMSET: one exec `Memset (Device)` with its bytes."""
    mk = "ifnull(memKind, 7)" if "memKind" in ctx.exp.tables["CUPTI_ACTIVITY_KIND_MEMSET"] else "7"
    exprs = ["start", "end", "deviceId", "streamId", "ifnull(correlationId, 0)", "globalPid", "bytes", mk]
    for start, end, dev, stream, corr, gpid, nbytes, kind in ctx.exp.int_columns("CUPTI_ACTIVITY_KIND_MEMSET", exprs):
        uniq, inv = unique_inverse(kind)
        names = [f"Memset ({MEMORY_KINDS.get(int(k), 'Unknown')})" for k in uniq]
        yield _device_copy(ctx, "CUPTI_ACTIVITY_KIND_MEMSET", start, end, dev, stream, corr, gpid, nbytes, "gpu_memset", dictionary(names, inv),
                           [])


def _device_copy(ctx: Context, table: str, start, end, dev, stream, corr, gpid, nbytes, cat: str, name: pa.Array,
                 extra: list) -> pa.Table:
    pe = ctx.device_rank(table, gpid, dev)
    s = int32_stream(stream)
    args = json_args([("correlation", json_int(corr, corr > 0))], tail=[("device", [dev]), *extra])
    msg = pe.astype(np.int64) * MSG_RANK_SHIFT + corr
    return build(ctx, start.size, kind="exec", pe=pe, start=start, end=end, cat=cat, name=name, tid=s.astype(np.int64),
                 corr=corr, nbytes=nbytes, stream=s, step=device_steps(ctx, msg, corr > 0), args=args)


def sync_rows(ctx: Context) -> Iterator[pa.Table]:
    """CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: device waits, `mark` rows with their stream (cuda_sync)."""
    exprs = ["start", "end", "deviceId", "streamId", "ifnull(correlationId, 0)", "globalPid", "syncType"]
    for start, end, dev, stream, corr, gpid, kind in ctx.exp.int_columns("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", exprs):
        pe = ctx.device_rank("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", gpid, dev)
        uniq, inv = unique_inverse(kind)
        name = dictionary([SYNC_NAMES.get(int(k), "Unknown Sync") for k in uniq], inv)
        s = int32_stream(stream)
        args = json_args([("correlation", json_int(corr, corr > 0))], tail=[("device", [dev])])
        msg = pe.astype(np.int64) * MSG_RANK_SHIFT + corr
        yield build(ctx, start.size, kind="mark", pe=pe, start=start, end=end, cat="cuda_sync", name=name,
                    tid=s.astype(np.int64), corr=corr, stream=s, step=device_steps(ctx, msg, corr > 0), args=args)


def nvtx_rows(ctx: Context) -> Iterator[pa.Table]:
    """NVTX_EVENTS ranges and marks: annotations, steps, CPU ops (emit_nvtx) and MPI calls."""
    exprs = ["start", "end", "eventType", "globalTid", "textId", "domainId", "end IS NOT NULL"]
    for (start, end, etype, gid, text_id, dom, has_end), text in ctx.exp.text_columns(
            "NVTX_EVENTS", exprs, "text", f"eventType IN {NVTX_ROWS}", times=1):  # marks have no end
        has_end = has_end.astype(np.bool_)
        name = nvtx_names(ctx, text, text_id)
        pe, n = ctx.rank(gid), start.size
        mark = np.isin(etype, NVTX_MARKS)
        step_no = per_value(name, lambda v: _step_number(ctx.step_re, v), dtype=np.int64, null=-1)
        is_step = (step_no >= 0) & ~mark & has_end
        ops = [_op_name(v) for v in name.dictionary.to_pylist()]  # per distinct name, not per row
        op = per_value(name, lambda v: bool(_op_name(v)), dtype=np.bool_, null=False)
        mpi = np.isin(dom, [d for d, t in ctx.domains.items() if t == MPI_DOMAIN])
        cat = choose(["user_annotation", "cpu_op", "mpi", "nvtx_mark"], np.select([mark, mpi, op], [3, 2, 1], 0))
        kind = choose(["exec", "step", "mark"], np.select([mark, is_step], [2, 1], 0))
        own = cpu_steps(ctx, pe, start)
        step = (np.where(is_step, step_no, own[0]), is_step | own[1])
        args = None
        is_op = from_numpy(op)
        if op.any():
            full = decode(name)
            name = encode(call_function("if_else", [is_op, call_function("take", [strings(ops), name.indices]), full]))
            args = call_function("if_else", [is_op, json_args([("nvtx", json_str(encode(full)))]),
                                             pa.nulls(n, pa.string())])
        uniq, inv = unique_inverse(dom)
        domain = [ctx.domains.get(int(d)) for d in uniq]
        if any(domain):
            known = from_numpy(np.array([d is not None for d in domain], dtype=np.bool_)[inv])
            dom_arg = call_function("if_else", [known, json_args([("domain", json_str(dictionary(domain, inv)))]),
                                                pa.nulls(n, pa.string())])
            args = dom_arg if args is None else call_function("coalesce", [args, dom_arg])
        yield build(ctx, n, kind=kind, pe=pe, start=start, end=np.where(mark, start, end),
                    end_ok=has_end & ~mark, cat=cat, name=name, tid=gid & ID_MASK, step=step, args=args)


def osrt_rows(ctx: Context) -> Iterator[pa.Table]:
    """OSRT_API: OS runtime calls (poll, ioctl, pthread_mutex_lock, ...) on their thread, as `mark` rows:
    most of their time is blocking (CloverLeaf: 501 ms of poll), which is not work."""
    ret = "returnValue" if "returnValue" in ctx.exp.tables["OSRT_API"] else "0"
    for start, end, gid, name_id, rv in ctx.exp.int_columns("OSRT_API", ["start", "end", "globalTid", "nameId", ret]):
        pe = ctx.rank(gid)
        yield build(ctx, start.size, kind="mark", pe=pe, start=start, end=end, cat="os_runtime",
                    name=ctx.names(name_id), tid=gid & ID_MASK, step=cpu_steps(ctx, pe, start),
                    args=json_args([], tail=[("return", [rv])]))


def mpi_rows(ctx: Context, table: str) -> Iterator[pa.Table]:
    """MPI_*_EVENTS: MPI calls on their thread; size -> bytes, remoteRank -> peer_pe, the rest in args."""
    extra = [c for c in MPI_ARG_COLUMNS if c in ctx.exp.tables[table]]
    for cols in ctx.exp.int_columns(table, ["start", "end", "globalTid", "textId", *extra]):
        start, end, gid, text_id = cols[:4]
        by = dict(zip(extra, cols[4:]))
        pe = ctx.rank(gid)
        args = json_args([(c, json_int(v)) for c, v in by.items()]) if by else None
        yield build(ctx, start.size, kind="exec", pe=pe, start=start, end=end, cat="mpi", name=ctx.names(text_id),
                    tid=gid & ID_MASK, step=cpu_steps(ctx, pe, start), args=args,
                    nbytes=by.get("size"), peer=by.get("remoteRank"))


DEVICE_READERS = (("CUPTI_ACTIVITY_KIND_KERNEL", kernel_rows), ("CUPTI_ACTIVITY_KIND_MEMCPY", memcpy_rows),
                  ("CUPTI_ACTIVITY_KIND_MEMSET", memset_rows), ("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", sync_rows))
"""Read after the runtime calls, whose steps the device rows take."""
MPI_TABLES = ("MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS", "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS")


def table_readers(ctx: Context) -> list[tuple[str, Callable[[Context], Iterator[pa.Table]]]]:
    """The readers of the tables the export has, in the order steps need: NVTX, runtime calls,
    device rows, the rest (also the order of rows with equal starts)."""
    readers: list[tuple[str, Callable[[Context], Iterator[pa.Table]]]] = [
        ("NVTX_EVENTS", nvtx_rows), ("CUPTI_ACTIVITY_KIND_RUNTIME", runtime_rows), *DEVICE_READERS,
        ("OSRT_API", osrt_rows), *((t, lambda c, t=t: mpi_rows(c, t)) for t in MPI_TABLES)]
    return [(table, reader) for table, reader in readers if ctx.exp.has(table)]

