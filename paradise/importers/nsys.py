"""Imports Nsight Systems SQLite exports (`nsys export --type sqlite`) into one paradise trace.

Per file: open and check it (nsys_sqlite), find the traced processes and give each a rank, read
its session start (TARGET_INFO_SESSION_START_TIME) so several files line up on Unix time; then
every event table is read in batches (nsys_tables) straight into the Parquet writer. The mapping
is docs/importers.md ("Nsight Systems").
"""

from __future__ import annotations

import itertools
import os
import re
import warnings
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paradise.errors import ImportFormatError, OutputUnwritable
from paradise.format import MAX_RANK, SCHEMA, make_metadata
from paradise.format.arrays import nulls
from paradise.format.order import NotInTimeOrder, merge_time_ordered, time_ordered
from paradise.format.summary import SummarizingWriter
from paradise.importers import ProgressCallback, Sources, output_summary, rank_files
from paradise.importers.nsys_sqlite import (
    REPORT_SUFFIXES,
    Export,
    export_report,
    open_export,
)
from paradise.importers.nsys_tables import (
    ID_MASK,
    NVTX_DOMAIN_CREATE,
    NVTX_ROWS,
    NVTX_THREAD_NAME,
    PID_SHIFT,
    ROW_SCHEMA,
    Context,
    PidNotSurveyed,
    collect_launch_steps,
    collect_steps,
    table_readers,
)
from paradise.store.output import check_output, disk_full, scratch_dir

DEFAULT_STEP_PATTERN = r"ProfilerStep#(\d+)"
"""NVTX ranges whose whole name matches are steps (the PyTorch profiler's step ranges); the group is N."""
OUT_ROW_GROUP = 64 * 1024
DICT_COLUMNS = ["kind", "cat", "name", "pe", "tid", "bytes", "step", "stream", "peer_pe"]
"""Dictionary-encoded in the file: the strings with few distinct values and the integer columns
that repeat a handful of values (rank, thread or stream, sizes, steps). Read back as plain
integers (the Arrow types do not change); `args`, a JSON text per row, gains nothing."""
ZSTD_COLUMNS = ("args",)
"""The only column compressed: `args` (JSON texts) shrinks 20x under zstd; every other column is
dictionary codes or deltas, which zstd shrinks little for its cost."""
DELTA_COLUMNS = ("t0", "t1", "msg")
"""Written DELTA_BINARY_PACKED: times in order and msg (rank * 2**40 + correlation id) change
little from row to row, so their deltas are about as small as zstd's output, for less CPU to
write and to read back."""
NO_STATISTICS = ("args", "cat", "name")
"""Columns written without min/max statistics: JSON texts, and the category and name of rows
whose names interleave in every row group, so that their min and max prune nothing (paradise
reads the statistics of kind, pe, t0, t1, peer_pe, bytes and exec_t0)."""
MPI_RANK_RE = re.compile(r"^MPI Rank (\d+)$")
"""The thread name `nsys --trace=mpi` gives each rank's main thread."""
CPU_TABLES = ("CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS", "OSRT_API", "MPI_P2P_EVENTS", "MPI_COLLECTIVES_EVENTS",
              "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS")
DEVICE_TABLES = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
                 "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")


@dataclass
class _File:
    path: Path
    exp: Export
    pids: list[int] = field(default_factory=list)
    ranks: dict[int, int] = field(default_factory=dict)
    rank_from: str = ""
    session_ns: int | None = None
    ts_min: int | None = None
    counts: dict[str, int] = field(default_factory=dict)
    processes: dict[int, str] = field(default_factory=dict)
    threads: dict[int, dict[str, str]] = field(default_factory=dict)
    mpi_names: dict[int, int] = field(default_factory=dict)
    devices: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    domains: dict[int, str] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    device_pairs: dict[str, list[tuple]] = field(default_factory=dict)
    """Per device table: its distinct (pid, deviceId) pairs, found by the survey."""


def _pids(exp: Export, table: str, gids: list[tuple]) -> list[tuple]:
    """The rows of a DISTINCT query on a serialized global id column (first) with its pid instead
    (None for NULL); a value that is not an integer is refused, as the rows' reader refuses it."""
    if any(not isinstance(r[0], int) for r in gids if r[0] is not None):
        raise exp.not_integer(table)
    return list(dict.fromkeys((None if r[0] is None else (r[0] >> PID_SHIFT) & ID_MASK, *r[1:]) for r in gids))


def _survey(f: _File, exact: bool, guess: bool) -> None:
    """Traced pids, row counts, first time, session start, names, devices of one export.

    The distinct pids of each table (with their devices, for device tables) take a scan of each,
    unless `guess`: then each table's first row gives them, and the rows' reader raises
    PidNotSurveyed on a row of another pid (or, in a device table, another (pid, device) pair), for
    the file to be surveyed again with the scans; where it raises none, the pids and devices are
    those the scans would find (each table has one pair, so their order is the same too). The first start is the first row's (`exact=False`:
    Nsight writes each table in start order, which the import then checks row by row,
    NotInTimeOrder otherwise) or min(start) (`exact`, a second scan that also counts rows missing a
    time; the rows' reader refuses those too)."""
    exp = f.exp
    pids: set[int] = set()
    starts = []
    for table in exp.tables:
        device = table in DEVICE_TABLES
        where = f" WHERE eventType IN {NVTX_ROWS}" if table == "NVTX_EVENTS" else ""
        if not guess:  # DISTINCT on the stored column, the pid taken in Python: a quarter cheaper in SQLite
            if device:
                pairs = _pids(exp, table, exp.query(f"SELECT DISTINCT globalPid, deviceId FROM {table}"))
                pids |= {pid for pid, _ in pairs if pid is not None}
                f.device_pairs[table] = pairs
            else:
                pids |= {r[0] for r in _pids(exp, table, exp.query(f"SELECT DISTINCT globalTid FROM {table}{where}"))
                         if r[0] is not None}
        if exact:
            no_end = "" if table == "NVTX_EVENTS" else " OR end IS NULL"  # marks have no end
            n, lo, bad = exp.query(f"SELECT count(*), min(start), count(*) FILTER (WHERE start IS NULL{no_end}) "
                                   f"FROM {table}{where}")[0]
        else:
            n, bad = exp.query(f"SELECT count(*) FROM {table}{where}")[0][0], 0
            ids = "globalPid, deviceId" if device else "globalTid"
            lo, *first = next(iter(exp.query(f"SELECT start, {ids} FROM {table}{where} ORDER BY rowid LIMIT 1")),
                              (None, None, None))
            if guess:
                pairs = _pids(exp, table, [tuple(first)]) if lo is not None else []
                pids |= {r[0] for r in pairs if r[0] is not None}
                if device:
                    f.device_pairs[table] = pairs
        if bad:
            raise ImportFormatError(f"{f.path}: table {table} has {bad} row(s) whose start or end is not an "
                                    "integer time in ns")
        if lo is not None and not isinstance(lo, int):
            raise ImportFormatError(f"{f.path}: table {table} holds a start that is not an integer time in ns")
        f.counts[table] = int(n)
        if lo is not None:
            starts.append(int(lo))
    f.pids = sorted(pids)
    f.ts_min = min(starts) if starts else None
    names = set(exp.query("SELECT name FROM sqlite_master WHERE type = 'table'"))
    names = {n[0] for n in names}
    if "TARGET_INFO_SESSION_START_TIME" in names:
        row = exp.query("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1")
        f.session_ns = int(row[0][0]) if row and row[0][0] is not None else None
    _names(f, names)
    _devices(f, names)


def _names(f: _File, tables: set[str]) -> None:
    """Process names, thread names (ThreadNames and NVTX thread naming) and NVTX domains."""
    exp, traced = f.exp, set(f.pids)
    if "PROCESSES" in tables:
        for pid, name in exp.query("SELECT pid, name FROM PROCESSES"):
            if pid in traced:
                f.processes[int(pid)] = str(name)
    rows: list[tuple[int, str]] = []
    if "ThreadNames" in tables:
        rows += exp.query("SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId")
    if exp.has("NVTX_EVENTS"):
        named = exp.query(f"SELECT eventType, globalTid, domainId, text FROM NVTX_EVENTS WHERE eventType IN "
                          f"({NVTX_THREAD_NAME}, {NVTX_DOMAIN_CREATE}) AND text IS NOT NULL")  # one scan for both
        rows += [(gid, text) for etype, gid, _, text in named if etype == NVTX_THREAD_NAME]
        f.domains = {int(d): str(text) for etype, _, d, text in named if etype == NVTX_DOMAIN_CREATE and d is not None}
        f.skipped = {f"nvtx_event_type_{t}": int(n) for t, n in exp.query(
            f"SELECT eventType, count(*) FROM NVTX_EVENTS WHERE eventType NOT IN {NVTX_ROWS} GROUP BY eventType")}
    for gid, name in rows:
        if gid is None or name is None:
            continue
        pid, tid = (int(gid) >> PID_SHIFT) & ID_MASK, int(gid) & ID_MASK
        if pid in traced:
            f.threads.setdefault(pid, {})[str(tid)] = str(name)
            m = MPI_RANK_RE.match(str(name))
            if m:
                f.mpi_names[pid] = int(m.group(1))


def _devices(f: _File, tables: set[str]) -> None:
    """GPUs (TARGET_INFO_GPU) each traced process ran device work on."""
    gpus: dict[int, dict[str, Any]] = {}
    if "TARGET_INFO_GPU" in tables:
        cols = {r[1] for r in f.exp.query('PRAGMA table_info("TARGET_INFO_GPU")')}
        keep = [c for c in ("id", "name", "uuid", "busLocation", "totalMemory", "smCount") if c in cols]
        if "id" in keep:
            for row in f.exp.query(f"SELECT {', '.join(keep)} FROM TARGET_INFO_GPU"):
                d = dict(zip(keep, row))
                gpus[int(d["id"])] = d
    for table in DEVICE_TABLES:
        if f.exp.has(table):
            for pid, dev in f.device_pairs[table]:
                if pid is not None and dev is not None:
                    lst = f.devices.setdefault(int(pid), [])
                    entry = gpus.get(int(dev), {"id": int(dev)})
                    if entry not in lst:
                        lst.append(entry)


def _assign_ranks(files: list[_File], rank: int | None) -> None:
    """Ranks per process: --rank (one process), `MPI Rank N` thread names, else the order given."""
    procs = [(f, pid) for f in files for pid in f.pids]
    if rank is not None:
        if len(procs) != 1:
            raise ImportFormatError(f"{files[0].path}: --rank applies to one traced process, found {len(procs)}")
        files[0].ranks, files[0].rank_from = {procs[0][1]: rank}, "--rank"
    elif procs and all(pid in f.mpi_names for f, pid in procs):
        for f, pid in procs:
            f.ranks[pid], f.rank_from = f.mpi_names[pid], "mpi_thread_name"
    else:
        if len(procs) > 1:
            warnings.warn(f"{len(procs)} traced processes without MPI rank names: ranks numbered 0-{len(procs) - 1} "
                          "in the order of the files given, then by pid", stacklevel=2)
        for i, (f, pid) in enumerate(procs):
            f.ranks[pid], f.rank_from = i, "order"
    seen: dict[int, Path] = {}
    for f in files:
        if not f.pids:
            raise ImportFormatError(f"{f.path}: no CUDA, NVTX, OS runtime or MPI rows to import")
        for pid, r in f.ranks.items():
            if not 0 <= r <= MAX_RANK:
                raise ImportFormatError(f"{f.path}: rank {r} is out of range (0 to {MAX_RANK})")
            if r in seen:
                raise ImportFormatError(f"{f.path}: rank {r} (pid {pid}) also comes from {seen[r]}")
            seen[r] = f.path


def _clock(files: list[_File]) -> tuple[str, int | None, dict[Path, int]]:
    """(method, origin on Unix time or None, shift per file): t = ts + shift, 0 at the first event."""
    timed = [f for f in files if f.ts_min is not None]
    aligned = bool(timed) and all(f.session_ns is not None for f in timed)
    base = {f.path: (f.session_ns or 0) if aligned else 0 for f in files}
    origin = min((f.ts_min + base[f.path] for f in timed), default=0)
    return ("nsys_session_start" if aligned else "trace_clock"), (origin if aligned and timed else None), \
        {f.path: base[f.path] - origin for f in files}


def _metadata(files: list[_File], method: str, origin: int | None, program: str) -> dict[bytes, bytes]:
    ranks: dict[str, Any] = {}
    for f in files:
        for pid, r in f.ranks.items():
            ranks[str(r)] = {"file": f.path.name, "pid": pid, "process": f.processes.get(pid),
                             "threads": f.threads.get(pid, {}), "devices": f.devices.get(pid, []),
                             "rank_from": f.rank_from}
    per_file = [{"file": f.path.name, "schema_version": f.exp.version, "product": f.exp.product,
                 "session_start_ns": f.session_ns, "tables": f.counts, "nvtx_domains": f.domains,
                 "skipped": f.skipped} for f in files]
    return make_metadata(
        source="nsys", program=program, pes=None, world_size=None,
        pe=next(iter(files[0].ranks.values())) if len(ranks) == 1 else None,
        clock={"method": method, "aligned_to_unix_time": origin is not None, "residual_ns": None},
        origin_ns=origin, complete=True,
        names={"kinds": "exec, collective, step, mark (see docs/importers.md, Nsight Systems)"},
        extra={"ranks": ranks, "files": per_file, "trace_origin_ns": origin},
    )


def _program_name(out: Path) -> str:
    return out.name.removesuffix(".parquet") or "nsys"


def import_trace(
    sources: Sources,
    out: str | os.PathLike,
    *,
    force: bool = False,
    on_progress: ProgressCallback | None = None,
    rank: int | None = None,
    program: str | None = None,
    step_pattern: str | None = None,
) -> Path:
    """Imports Nsight Systems SQLite exports (or .nsys-rep reports, with nsys) into one Parquet trace."""
    paths = rank_files(sources, "Nsight Systems exports", "an Nsight Systems export", rank)
    try:
        step_re = re.compile(step_pattern or DEFAULT_STEP_PATTERN)
    except re.error as exc:
        raise ImportFormatError(f"--step-pattern {step_pattern!r}: not a regular expression ({exc})") from None
    if step_re.groups < 1:
        raise ImportFormatError(f"--step-pattern {step_pattern!r}: needs one group capturing the step number")
    if len({os.path.realpath(p) for p in paths}) < len(paths):
        raise ImportFormatError(f"{paths[-1]}: given twice")
    out = check_output(Path(out), force=force, inputs=paths)
    with scratch_dir(out) as tmpdir:
        try:
            _import_into(paths, out, tmpdir, rank, program or _program_name(out), step_re, on_progress)
        except OSError as exc:
            if not disk_full(exc):
                raise
            raise OutputUnwritable(f"{out}: cannot write ({exc.strerror or exc}); nothing written") from None
    return out


def _import_into(paths: list[Path], out: Path, tmpdir: Path, rank: int | None, program: str, step_re: re.Pattern,
                 on_progress: ProgressCallback | None) -> None:
    """Trusts each table's start order (its first row is its first start, its rows merge as read);
    where one is out of order, imports again from an exact survey through the spill sort."""
    srcs = [export_report(p, tmpdir / f"{i}") if p.name.endswith(REPORT_SUFFIXES) else p for i, p in enumerate(paths)]
    in_order = guess = True
    while True:
        try:
            _import_files(paths, srcs, out, tmpdir, rank, program, step_re, on_progress, in_order, guess)
            return
        except PidNotSurveyed:  # raised only where guess
            guess = False
        except NotInTimeOrder:  # raised only where in_order
            in_order = guess = False


def _import_files(paths: list[Path], srcs: list[Path], out: Path, tmpdir: Path, rank: int | None, program: str,
                  step_re: re.Pattern, on_progress: ProgressCallback | None, in_order: bool, guess: bool) -> None:
    files: list[_File] = []
    try:
        for p, src in zip(paths, srcs):
            f = _File(path=p, exp=open_export(src, p))
            files.append(f)
            _survey(f, exact=not in_order, guess=guess)
        _assign_ranks(files, rank)
        method, origin, shift = _clock(files)
        meta = _metadata(files, method, origin, program)
        total = sum(sum(f.counts.values()) for f in files)
        final_tmp = tmpdir / "out.parquet"
        _write(files, shift, step_re, meta, final_tmp, total, on_progress, in_order, guess)
        os.replace(final_tmp, out)
    finally:
        for f in files:
            f.exp.close()


def _checked(f: _File, table: str, rows: Iterator[pa.Table]) -> Iterator[pa.Table]:
    """rows, with a value of the wrong type (text in an id column) refused naming its table."""
    try:
        yield from rows
    except (TypeError, ValueError, OverflowError) as exc:
        raise _wrong_type(f, table, exc) from None


def _wrong_type(f: _File, table: str, exc: Exception) -> ImportFormatError:
    return ImportFormatError(f"{f.path}: table {table} holds a value of the wrong type "
                             f"({str(exc).splitlines()[0][:80]})")


def _full(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rows of ROW_SCHEMA with the format's other columns added, null."""
    n = table.num_rows
    return pa.Table.from_arrays([table.column(f.name) if f.name in ROW_SCHEMA.names else nulls(n, f.type)
                                 for f in schema], schema=schema)


def _time_ordered_rows(f: _File, ctx: Context, in_order: bool, scratch: Path) -> Iterator[pa.Table]:
    """The file's rows in time order. With `in_order` (tables trusted to be in start order) they
    are merged as they are read (merge_time_ordered, NotInTimeOrder where a table is not); the
    format's spill sort takes them otherwise. Steps and each launch's step are read first."""
    for table, collect in (("NVTX_EVENTS", collect_steps), ("CUPTI_ACTIVITY_KIND_RUNTIME", collect_launch_steps)):
        try:
            collect(ctx)
        except (TypeError, ValueError, OverflowError) as exc:
            raise _wrong_type(f, table, exc) from None
    streams = [_checked(f, table, reader(ctx)) for table, reader in table_readers(ctx)]  # lazy: none read yet
    if in_order:
        yield from merge_time_ordered(streams, ROW_SCHEMA)
        return
    yield from time_ordered(itertools.chain.from_iterable(streams), ROW_SCHEMA, scratch)


def _write(files: list[_File], shift: dict[Path, int], step_re: re.Pattern, meta: dict[bytes, bytes],
           final_tmp: Path, total: int, on_progress: ProgressCallback | None, in_order: bool, guess: bool) -> None:
    """Every file's rows through one ParquetWriter, in row groups of about OUT_ROW_GROUP rows, each
    written on a second thread while the next is read (both release the GIL for most of their work)."""
    schema = SCHEMA.with_metadata(meta)
    done = 0
    with SummarizingWriter(final_tmp, schema, output_summary(total), use_dictionary=DICT_COLUMNS,
                           compression={c: "zstd" if c in ZSTD_COLUMNS else "none" for c in schema.names},
                           column_encoding=dict.fromkeys(DELTA_COLUMNS, "DELTA_BINARY_PACKED"),
                           write_statistics=[c for c in schema.names if c not in NO_STATISTICS]) as writer, \
            _GroupWriter(writer, meta) as groups:
        pending: list[pa.Table] = []
        rows = 0
        for i, f in enumerate(files):
            pids = np.array(sorted(f.ranks), dtype=np.int64)
            ctx = Context(exp=f.exp, pids=pids, ranks=np.array([f.ranks[p] for p in pids], dtype=np.int64),
                          shift=shift[f.path], step_re=step_re, domains=f.domains, guessed=guess,
                          devices=f.device_pairs)
            # each rank's rows are in time order when the file's are
            for table in _time_ordered_rows(f, ctx, in_order, final_tmp.with_name(f"order-{i}.arrow")):
                pending.append(_full(table, schema))
                rows += table.num_rows
                done += table.num_rows
                if on_progress is not None:
                    on_progress(min(done, total), total)
                if rows >= OUT_ROW_GROUP:
                    groups.write(pending)
                    pending, rows = [], 0
        if pending:
            groups.write(pending)


class _GroupWriter:
    """Writes row groups on one background thread, one group at a time and in the order given:
    at most one group is being written while the next is built (memory stays bounded)."""

    def __init__(self, writer: pq.ParquetWriter, meta: dict[bytes, bytes]) -> None:
        self._writer, self._meta = writer, meta
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="paradise-nsys-write")
        self._inflight: Future | None = None

    def write(self, tables: list[pa.Table]) -> None:
        self._wait()
        self._inflight = self._pool.submit(self._write_group, tables)

    def _write_group(self, tables: list[pa.Table]) -> None:
        self._writer.write_table(pa.concat_tables(tables).replace_schema_metadata(self._meta))

    def _wait(self) -> None:
        if self._inflight is not None:
            inflight, self._inflight = self._inflight, None
            inflight.result()  # the write's error, raised here

    def __enter__(self) -> _GroupWriter:
        return self

    def __exit__(self, exc_type, *_: object) -> None:
        try:
            if exc_type is None:
                self._wait()
        finally:
            self._pool.shutdown(wait=True)  # an error elsewhere: the write in flight ends before the file closes
