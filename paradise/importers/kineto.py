"""Imports PyTorch profiler (Kineto) Chrome-trace JSON files, one per rank, into one paradise trace.

Two passes keep memory bounded whatever the input size:
1. each file is streamed (kineto_scan) and decoded batch by batch (kineto_events) into a
   temporary Arrow IPC stream; step intervals, CPU launches (correlation -> time) and the time
   range are collected on the side;
2. once every header is known (rank, baseTimeNanoseconds may come after the events), the
   temporary files are rewritten with ranks, aligned times from the earliest event, and
   steps: CPU-side rows by the ProfilerStep#N interval they start in, device rows by the
   step of the runtime call that launched them (same correlation id).
The output appears atomically; see docs/importers.md ("Kineto") for the mapping.
"""

from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from paradise.errors import ImportFormatError, OutputUnwritable
from paradise.format import MAX_RANK, SCHEMA, WRITE_OPTIONS, conform, make_metadata
from paradise.format.order import time_ordered
from paradise.format.summary import SummarizingWriter
from paradise.importers import ProgressCallback, Sources, output_summary, rank_files
from paradise.importers.kineto_arrow import from_numpy, to_numpy, validity
from paradise.importers.kineto_events import (
    CC_ANNOTATION,
    CC_C10D,
    COLLECTIVE_PRIORITY,
    KINDS,
    PASS1_SCHEMA,
    BatchResult,
    EventDecodeError,
    collective_kind,
    decode_batch,
    validate_batch,
)
from paradise.importers.kineto_scan import EventScanner
from paradise.store.output import check_output, disk_full, scratch_dir

EPOCH_FLOOR_NS = 10**18
"""ts at or past this (2001-09-09 in Unix ns) are taken as Unix time already (older Kineto)."""
OUT_ROW_GROUP = 64 * 1024
"""Rows per output row group: big enough for good compression, small enough to stream."""
MSG_RANK_SHIFT = 1 << 40
"""msg = rank * 2**40 + correlation id: unique across ranks (CUPTI ids are 32-bit); the raw id
stays in args.correlation."""


PARALLEL_MIN_BYTES = 64 << 20
"""Inputs at least this large decode batches in worker processes (start-up ~0.5 s each)."""
MAX_WORKERS = 4
"""Worker processes at most: each holds a batch or two (~100 MB with its imports)."""
MIN_CPUS_FOR_WORKERS = 4
"""Below this the main process's splitting and the batch transfers leave nothing to gain: on a
busy 2-CPU machine the pool took ~30% more CPU and was slower than decoding in-process."""




@dataclass
class _FileInfo:
    path: Path
    tmp: Path
    header: dict[str, Any] = field(default_factory=dict)
    rank: int | None = None
    rows: int = 0
    ts_min: int | None = None
    ts_max: int | None = None
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    launches: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    processes: dict[str, str] = field(default_factory=dict)
    threads: dict[str, str] = field(default_factory=dict)
    other_phases: dict[str, int] = field(default_factory=dict)
    collective_classes: set[int] = field(default_factory=set)
    annotation_kinds: set[str] = field(default_factory=set)
    method: str = "none"
    offset: int = 0


def _rank_of(info: _FileInfo, header: dict[str, Any], rank: int | None) -> int | None:
    """The file's rank from distributedInfo, else --rank; None when the header lacks it so far."""
    dist = header.get("distributedInfo")
    found = dist.get("rank") if isinstance(dist, dict) else None
    if found is not None:
        if type(found) is not int:
            try:
                if isinstance(found, bool) or (isinstance(found, float) and not found.is_integer()):
                    raise ValueError(found)
                found = int(found)
            except (TypeError, ValueError, OverflowError):
                raise ImportFormatError(
                    f"{info.path}: distributedInfo.rank is not an integer ({found!r})"
                ) from None
        if not 0 <= found <= MAX_RANK:
            raise ImportFormatError(f"{info.path}: distributedInfo.rank {found} is out of range (0 to {MAX_RANK})")
        if rank is not None and rank != found:
            raise ImportFormatError(
                f"{info.path}: distributedInfo.rank is {found} but --rank {rank} was given"
            )
        return found
    return rank


def _no_rank(info: _FileInfo) -> ImportFormatError:
    return ImportFormatError(
        f"{info.path}: no rank in the trace (distributedInfo.rank missing); pass --rank R with this one file"
    )


def _name_of(raw_args: bytes) -> str | None:
    try:
        args = json.loads(raw_args) if raw_args else {}
    except ValueError:
        return None
    value = args.get("name") if isinstance(args, dict) else None
    return value if isinstance(value, str) else None


def _checked(scanner: EventScanner, info: _FileInfo) -> Iterable:
    try:
        yield from scanner.batches()
    except EventDecodeError as exc:
        raise ImportFormatError(f"{info.path}: malformed trace event ({exc})") from None


def _pooled(texts: Iterable[bytes], pool: Executor, depth: int, info: _FileInfo) -> Iterable[BatchResult]:
    """decode_batch of each text in worker processes, in order, `depth` batches in flight."""
    pending: deque[Future] = deque()
    try:
        for text in texts:
            pending.append(pool.submit(decode_batch, text))
            if len(pending) >= depth:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except EventDecodeError as exc:
        raise ImportFormatError(f"{info.path}: malformed trace event ({exc})") from None
    finally:
        for fut in pending:
            fut.cancel()


def _pass1(
    info: _FileInfo,
    rank: int | None,
    on_bytes: Callable[[int], None] | None,
    pool: tuple[Executor, int] | None = None,
) -> None:
    if pool is None:
        scanner = EventScanner(info.path, on_bytes, decode=decode_batch, retry_on=(EventDecodeError,))
        results = _checked(scanner, info)
    else:  # the main process splits and validates; workers decode
        scanner = EventScanner(info.path, on_bytes, decode=validate_batch, retry_on=(EventDecodeError,))
        results = _pooled(_checked(scanner, info), pool[0], 2 * pool[1], info)
    writer: pa.ipc.RecordBatchStreamWriter | None = None
    rank_checked = False
    try:
        for res in results:
            if not rank_checked and scanner.early_header is not None:
                rank_checked = True
                if (
                    "distributedInfo" in scanner.early_header
                    and _rank_of(info, scanner.early_header, rank) is None
                ):
                    raise _no_rank(info)
            for name, pid, tid, raw in res.meta_events:
                if name in ("process_name", "thread_name"):
                    label = _name_of(raw)
                    if label is not None:
                        if name == "process_name":
                            info.processes[str(pid)] = label
                        else:
                            info.threads[f"{pid}/{tid}"] = label
            for k, v in res.other_phases.items():
                info.other_phases[k] = info.other_phases.get(k, 0) + v
            info.collective_classes |= res.collective_classes
            info.annotation_kinds |= res.annotation_kinds
            t = res.table
            if t is None:
                continue
            if writer is None:
                writer = pa.ipc.new_stream(str(info.tmp), PASS1_SCHEMA)
            writer.write_table(t)
            info.rows += t.num_rows
            t0, t1 = res.t0, res.t1
            lo, hi = int(t0.min()), int(t0.max())
            info.ts_min = lo if info.ts_min is None else min(info.ts_min, lo)
            info.ts_max = hi if info.ts_max is None else max(info.ts_max, hi)
            m = res.is_step
            if m.any():
                info.steps.append((t0[m], t1[m], res.step[m].astype(np.int64)))
            m = res.has_msg & ~res.device
            if m.any():
                info.launches.append((res.msg[m], t0[m]))
    finally:
        if writer is not None:
            writer.close()
    info.header = scanner.header
    info.rank = _rank_of(info, info.header, rank)
    if info.rank is None:
        raise _no_rank(info)


def _classify_clock(info: _FileInfo) -> None:
    """Decides how the file's ts map to Unix time.

    Newer Kineto writes ts relative to baseTimeNanoseconds, however long the process ran: in
    nccl_parser_config base + ts is 51 days after the base and matches the profiler's own log
    lines to the second; in the gloo rank-34 trace (14 days) it matches the file's name.
    """
    base = info.header.get("baseTimeNanoseconds")
    base = int(base) if isinstance(base, (int, float)) and not isinstance(base, bool) else None
    if info.ts_min is None or info.ts_max is None:
        info.method, info.offset = "none", 0
    elif info.ts_min >= EPOCH_FLOOR_NS:
        info.method, info.offset = "unix_ts", 0
    elif base is not None:
        info.method, info.offset = "baseTimeNanoseconds", base
    else:
        info.method, info.offset = "trace_clock", 0


def _assign(
    t: np.ndarray, starts: np.ndarray, ends: np.ndarray, nums: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Step number of the interval each time falls in ([start, end)); (values, found)."""
    if starts.size == 0:
        return np.zeros(t.size, dtype=np.int64), np.zeros(t.size, dtype=np.bool_)
    idx = np.searchsorted(starts, t, side="right") - 1
    ok = idx >= 0
    idx = np.clip(idx, 0, None)
    ok &= t < ends[idx]
    return nums[idx], ok


class _StepIndex:
    """Per-rank step intervals and launch correlation -> step, for vectorised lookups."""

    def __init__(self, info: _FileInfo) -> None:
        if info.steps:
            s0 = np.concatenate([s[0] for s in info.steps])
            s1 = np.concatenate([s[1] for s in info.steps])
            sn = np.concatenate([s[2] for s in info.steps])
            order = np.argsort(s0, kind="stable")
            self.starts, self.ends, self.nums = s0[order], s1[order], sn[order]
        else:
            self.starts = self.ends = self.nums = np.zeros(0, dtype=np.int64)
        if info.launches:
            corr = np.concatenate([x[0] for x in info.launches])
            lt0 = np.concatenate([x[1] for x in info.launches])
            order = np.argsort(corr, kind="stable")
            self.corr = corr[order]
            self.lstep, self.lok = _assign(lt0[order], self.starts, self.ends, self.nums)
        else:
            self.corr = np.zeros(0, dtype=np.int64)
            self.lstep = np.zeros(0, dtype=np.int64)
            self.lok = np.zeros(0, dtype=np.bool_)

    def steps_for(self, t0: np.ndarray, dev: np.ndarray, msg: np.ndarray, has_msg: np.ndarray) -> tuple:
        vals, ok = _assign(t0, self.starts, self.ends, self.nums)
        if dev.any():
            ok = ok & ~dev  # device rows: only through their launch
            if self.corr.size:
                d = np.flatnonzero(dev & has_msg)
                pos = np.searchsorted(self.corr, msg[d])
                posc = np.clip(pos, 0, self.corr.size - 1)
                hit = (pos < self.corr.size) & (self.corr[posc] == msg[d])
                d, posc = d[hit], posc[hit]
                vals[d] = self.lstep[posc]
                ok[d] = self.lok[posc]
        return vals, ok


def _pass2_batches(info: _FileInfo, origin: int) -> Iterable[pa.Table]:
    index = _StepIndex(info)
    shift = info.offset - origin
    with pa.OSFile(str(info.tmp)) as source:
        yield from _rewrite(info, index, shift, pa.ipc.open_stream(source))


def _rewrite(info: _FileInfo, index: _StepIndex, shift: int, reader: pa.ipc.RecordBatchStreamReader):
    for batch in reader:  # one pass-1 batch at a time keeps memory flat
        n = batch.num_rows
        t0_file = to_numpy(batch.column("t0"), np.int64)
        t0 = t0_file + shift
        t1 = to_numpy(batch.column("t1"), np.int64) + shift
        dev = to_numpy(batch.column("_dev"), np.bool_)
        msg_col = batch.column("msg")
        has_msg = validity(msg_col)
        msg = to_numpy(msg_col, np.int64)
        own = batch.column("step")
        vals, ok = index.steps_for(t0_file, dev, msg, has_msg)
        own_ok = validity(own)
        vals = np.where(own_ok, to_numpy(own, np.int32).astype(np.int64), vals)
        ok = ok | own_ok
        cols = {
            name: batch.column(name)
            for name in batch.schema.names
            if name not in ("_dev", "_cc", "t0", "t1", "step", "msg")
        }
        _one_row_per_collective(cols, to_numpy(batch.column("_cc"), np.int8), info)
        packable = has_msg & (msg >= 0) & (msg < MSG_RANK_SHIFT)
        cols["msg"] = from_numpy(np.where(packable, msg + info.rank * MSG_RANK_SHIFT, msg), has_msg)
        cols["pe"] = from_numpy(np.full(n, info.rank, dtype=np.int32))
        cols["t0"] = from_numpy(t0)
        cols["t1"] = from_numpy(t1)
        cols["step"] = from_numpy(vals.astype(np.int32), ok)
        yield conform(pa.Table.from_pydict(cols))


_EXEC_IDX, _COLL_IDX = KINDS.index("exec"), KINDS.index("collective")


def _carrier(info: _FileInfo) -> int | None:
    """The twin class that carries this rank's collectives (COLLECTIVE_PRIORITY)."""
    return next((c for c in COLLECTIVE_PRIORITY if c in info.collective_classes), None)


def _one_row_per_collective(cols: dict[str, Any], cc: np.ndarray, info: _FileInfo) -> None:
    """Keeps `collective` on the carrier's rows (one per call); the other twins become exec rows
    without bytes. Where annotations carry, c10d:: calls of kinds no annotation has carry as well."""
    kind = cols["kind"]
    idx = to_numpy(kind.indices, np.int32)
    carrier = _carrier(info)
    twin = (idx == _COLL_IDX) & (cc != carrier)
    if carrier == CC_ANNOTATION:
        for i in np.flatnonzero(twin & (cc == CC_C10D)).tolist():  # a few per step
            if collective_kind(str(cols["name"][i].as_py())) not in info.annotation_kinds:
                twin[i] = False
    if not twin.any():
        return
    cols["kind"] = pa.DictionaryArray.from_arrays(from_numpy(np.where(twin, _EXEC_IDX, idx).astype(np.int32)),
                                                  kind.dictionary)
    nb = cols["bytes"]
    cols["bytes"] = from_numpy(to_numpy(nb, np.int64), validity(nb) & ~twin)


def _worker_count(total_bytes: int) -> int:
    """Worker processes for decoding: none for small inputs or a single CPU."""
    if total_bytes < PARALLEL_MIN_BYTES:
        return 0
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return min(MAX_WORKERS, cpus - 1) if cpus >= MIN_CPUS_FOR_WORKERS else 0


@contextmanager
def _worker_pool(workers: int) -> Iterator[Executor | None]:
    """A pool of forked decoder processes, or None (inline) when forking is not safe here.

    Fork, not spawn/forkserver: those re-import the caller's __main__ in every worker (the whole
    CLI, or nothing at all from stdin). Forking is safe while this process runs one thread, so
    every worker is forked up front, before the progress bar's thread can start.
    """
    if workers == 0:  # small inputs: do not even import multiprocessing
        yield None
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    if threading.active_count() > 1 or "fork" not in mp.get_all_start_methods():
        yield None
        return
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("fork"))
    try:
        pool.submit(int).result()  # launches all workers now
        yield pool
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _program_name(out: Path) -> str:
    name = out.name
    for suffix in (".parquet", ".json", ".gz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name or "kineto"


def _metadata(infos: list[_FileInfo], origin: int | None, program: str) -> dict[bytes, bytes]:
    world = None
    dist0: dict[str, Any] = {}
    for info in infos:
        dist = info.header.get("distributedInfo")
        if isinstance(dist, dict):
            dist0 = dist0 or dist
            if world is None and isinstance(dist.get("world_size"), int):
                world = dist["world_size"]
    methods = {info.method for info in infos if info.method != "none"}
    method = methods.pop() if len(methods) == 1 else ("mixed" if methods else "none")
    aligned = method in ("baseTimeNanoseconds", "unix_ts")
    ranks = {}
    for info in infos:
        h = info.header
        devices = h.get("deviceProperties")
        ranks[str(info.rank)] = {
            "file": info.path.name,
            "events": info.rows,
            "clock": info.method,
            "baseTimeNanoseconds": h.get("baseTimeNanoseconds"),
            "schemaVersion": h.get("schemaVersion"),
            "displayTimeUnit": h.get("displayTimeUnit"),
            "traceName": h.get("traceName"),
            "devices": [d.get("name") for d in devices if isinstance(d, dict)]
            if isinstance(devices, list)
            else None,
            "processes": info.processes,
            "threads": info.threads,
            "skipped_phases": info.other_phases,
        }
    return make_metadata(
        source="kineto",
        program=program,
        pes=world,
        world_size=world,
        pe=infos[0].rank if len(infos) == 1 else None,
        clock={
            "method": method,
            "aligned_to_unix_time": aligned,
            "per_rank": {str(i.rank): i.method for i in infos},
            "residual_ns": None,
        },
        origin_ns=origin if aligned else None,
        complete=True,
        names={"kinds": "exec, collective, step, mark (see docs/importers.md, Kineto)"},
        extra={
            "distributedInfo": {k: v for k, v in dist0.items() if k != "pg_config"},
            "pg_config": dist0.get("pg_config"),
            "ranks": ranks,
            "trace_origin_ns": origin,
        },
    )


def import_trace(
    sources: Sources,
    out: str | os.PathLike,
    *,
    force: bool = False,
    on_progress: ProgressCallback | None = None,
    rank: int | None = None,
    program: str | None = None,
) -> Path:
    """Imports Kineto trace files (one per rank) into one Parquet trace at `out`; returns its path."""
    paths = rank_files(sources, "Kineto trace files", "a Kineto trace file", rank, rank_needs_one=True)
    out = check_output(Path(out), force=force, inputs=paths)
    with scratch_dir(out) as tmpdir:
        _import_into(paths, out, tmpdir, rank=rank, program=program, on_progress=on_progress)
    return out


def _import_into(paths: list[Path], out: Path, tmpdir: Path, *, rank: int | None, program: str | None,
                 on_progress: ProgressCallback | None) -> None:
    """Both passes, with intermediate files in tmpdir; the output renamed into place at the end."""
    final_tmp = tmpdir / "out.parquet"
    try:
        infos = [_FileInfo(path=p, tmp=tmpdir / f"pass1-{i:05d}.arrows") for i, p in enumerate(paths)]
        total = sum(p.stat().st_size for p in paths)
        done = [0]

        def on_bytes(n: int) -> None:
            done[0] += n
            if on_progress is not None:
                on_progress(done[0], total)

        workers = _worker_count(total)
        with _worker_pool(workers) as pool:
            for info in infos:
                try:
                    _pass1(info, rank, on_bytes, (pool, workers) if pool is not None else None)
                except RecursionError:
                    raise ImportFormatError(f"{info.path}: JSON nested too deeply") from None
        seen: dict[int, Path] = {}
        for info in infos:
            assert info.rank is not None
            if info.rank in seen:
                raise ImportFormatError(f"{info.path}: rank {info.rank} also comes from {seen[info.rank]}")
            seen[info.rank] = info.path
            _classify_clock(info)
        starts = [info.ts_min + info.offset for info in infos if info.ts_min is not None]
        origin = min(starts) if starts else 0
        meta = _metadata(infos, origin if starts else None, program or _program_name(out))
        schema = SCHEMA.with_metadata(meta)
        _write_output(infos, origin, meta, schema, final_tmp, out)
    except OSError as exc:  # pass 1 spills beside the output: a full disk there is an output problem
        if not disk_full(exc):
            raise
        raise OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc}); nothing written") from None


def _write_output(infos: list[_FileInfo], origin: int, meta: Any, schema: pa.Schema, final_tmp: Path,
                  out: Path) -> None:
    """Pass 2 into the temporary file, renamed onto OUT when complete."""
    try:
        with SummarizingWriter(final_tmp, schema, output_summary(sum(info.rows for info in infos)), **WRITE_OPTIONS) as writer:
            pending: list[pa.Table] = []
            rows = 0
            for info in infos:
                if info.rows == 0:
                    continue
                # one rank's rows in time order (Kineto lists them thread by thread, stream by stream)
                ordered = time_ordered(_pass2_batches(info, origin), schema, info.tmp.with_suffix(".order"))
                for table in ordered:
                    pending.append(table)
                    rows += table.num_rows
                    if rows >= OUT_ROW_GROUP:
                        writer.write_table(pa.concat_tables(pending).replace_schema_metadata(meta))
                        pending, rows = [], 0
            if pending:
                writer.write_table(pa.concat_tables(pending).replace_schema_metadata(meta))
        os.replace(final_tmp, out)
    except OSError as exc:  # the output side only: full disk, read-only file system
        raise OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc}); nothing written") from None
