"""Opens an Nsight Systems SQLite export read-only and checks it is one this importer reads.

Why a module of its own: every refusal (not SQLite, truncated, a foreign database, a schema
version or a table this importer does not know) is decided here, before any row is read, as one
line naming the file and what is missing. `.nsys-rep` reports are exported with `nsys` when it is
on PATH.
"""

from __future__ import annotations

import queue
import re
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import adbc_driver_manager as adbc
import adbc_driver_sqlite
import numpy as np
import pyarrow as pa
from pyarrow._compute import CastOptions, call_function

from paradise.errors import ImportFormatError, SchemaVersionError, TruncatedTrace
from paradise.importers.kineto_arrow import from_numpy, to_numpy, validity

SQLITE_MAGIC = b"SQLite format 3\x00"
KNOWN_MAJORS = (2, 3)
"""Export schema majors read and tested: 2.9 (Nsight Systems 2022.2) and 3.13 (2024.5)."""
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
"""Where the export writes its product and schema version (3.x name first, then 2.x)."""
REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
BATCH_ROWS = 65_536
"""Rows per Arrow record batch the ADBC driver hands over."""
PREFETCH = 2
"""Batches each table's reader thread reads ahead of the import: with the one being turned into
rows, the most of a table held at once is PREFETCH + 1 batches."""
MMAP_BYTES = 1 << 40
"""PRAGMA mmap_size of both connections (SQLite caps it at its build's limit, 2 GiB here): pages
are read from the mapped file instead of copied into SQLite's page cache (the export is opened
immutable: it does not change under the import)."""
IFNULL_RE = re.compile(r"^ifnull\((\w+), (-?\d+)\)$")
"""`ifnull(column, constant)`, which _batches reads as the bare column with NULL set in numpy
(an ifnull per value is work SQLite does for every row)."""

EVENT_TABLES: dict[str, tuple[str, ...]] = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ("start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                                   "demangledName", "shortName"),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes",
                                   "copyKind"),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("start", "end", "deviceId", "streamId", "correlationId", "globalPid", "bytes"),
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": ("start", "end", "deviceId", "streamId", "correlationId", "globalPid",
                                            "syncType"),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end", "eventClass", "globalTid", "correlationId", "nameId"),
    "NVTX_EVENTS": ("start", "end", "eventType", "text", "globalTid", "textId", "domainId"),
    "OSRT_API": ("start", "end", "globalTid", "nameId"),
    "MPI_P2P_EVENTS": ("start", "end", "globalTid", "textId"),
    "MPI_COLLECTIVES_EVENTS": ("start", "end", "globalTid", "textId"),
    "MPI_START_WAIT_EVENTS": ("start", "end", "globalTid", "textId"),
    "MPI_OTHER_EVENTS": ("start", "end", "globalTid", "textId"),
}
"""Event tables read, with the columns each must have. Any may be absent (a run without NVTX has
no NVTX_EVENTS); one that is present without these columns is refused."""


@dataclass
class Export:
    """One open export: its connection, version and the event tables it holds (with columns)."""

    path: Path
    con: sqlite3.Connection
    version: str
    product: str
    uri: str = ""
    """The read-only SQLite URI both connections open (sqlite3 for small queries, ADBC for the rows)."""
    tables: dict[str, set[str]] = field(default_factory=dict)
    _adbc: tuple[adbc.AdbcDatabase, adbc.AdbcConnection] | None = None
    _readers: set[_Prefetch] = field(default_factory=set)

    def has(self, table: str) -> bool:
        return table in self.tables

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """A small query's rows (metadata tables, aggregates)."""
        try:
            return self.con.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, exc) from None

    def int_columns(self, table: str, exprs: list[str], where: str = "", times: int = 2) -> Iterator[list[np.ndarray]]:
        """Integer columns of a table in rowid order, BATCH_ROWS rows at a time (NULL reads as -1,
        except in the first `times` columns, start and end, where a NULL is refused).

        Read through the ADBC SQLite driver: SQLite's rows become Arrow record batches in C, streamed,
        so no Python object is made per value. A value that is not an integer is refused, naming the table.
        """
        for cols, _ in self._batches(table, exprs, None, where, times):
            yield cols

    def text_columns(self, table: str, exprs: list[str], text: str, where: str = "",
                     times: int = 2) -> Iterator[tuple[list[np.ndarray], pa.Array]]:
        """int_columns plus one text column (Arrow strings, NULL kept)."""
        yield from self._batches(table, exprs, text, where, times)  # type: ignore[misc]

    def _batches(self, table: str, exprs: list[str], text: str | None, where: str,
                 times: int) -> Iterator[tuple[list[np.ndarray], pa.Array | None]]:
        fills = [IFNULL_RE.match(e) for e in exprs]  # NULL -> -1 (or ifnull's constant) in numpy
        sel = [m.group(1) if m else e for m, e in zip(fills, exprs)]
        if text is not None:
            # a column of texts that opens with NULLs would be typed int64 by the driver: never NULL here
            sel += [f"({text}) IS NULL", f"ifnull(CAST({text} AS TEXT), '')"]
        sql = f"SELECT {', '.join(sel)} FROM {table}{_where(where)} ORDER BY rowid"
        n_int = len(sel) - (1 if text is not None else 0)
        for batch in self._stream(table, sql):
            if any(batch.schema.types[i] != pa.int64() for i in range(n_int)):
                raise self.not_integer(table)
            if any(batch.column(i).null_count for i in range(times)):
                raise ImportFormatError(f"{self.path}: table {table} has row(s) whose start or end is not an "
                                        "integer time in ns")
            cols = [_ints(batch.column(i), int(m.group(2)) if m else -1)
                    for i, m in zip(range(n_int), [*fills, None])]
            if text is None:
                yield cols, None
                continue
            texts = batch.column(n_int)
            if texts.type != pa.string():
                texts = call_function("cast", [texts], CastOptions.safe(pa.string()))
            null = from_numpy(cols[-1].astype(np.bool_))
            yield cols[:-1], call_function("if_else", [null, pa.nulls(len(texts), pa.string()), texts])

    def _stream(self, table: str, sql: str) -> Iterator[pa.RecordBatch]:
        """The query's record batches from the ADBC driver, read on a thread of its own (with a
        connection of its own) PREFETCH batches ahead of the caller: SQLite and the driver release
        the GIL, so the rows of one table are read while those of another are turned into paradise
        rows. Its errors are refused in one line naming the table."""
        reader = _Prefetch(self._adbc_connection(new=True), sql)
        self._readers.add(reader)
        try:
            for item in reader:
                if isinstance(item, BaseException):
                    raise item
                yield item
        except (adbc.Error, OSError, pa.ArrowException) as exc:
            text = str(exc)
            if "Type mismatch" in text:
                raise self.not_integer(table) from None
            raise _damaged(self.path, exc) from None
        finally:
            reader.stop()
            self._readers.discard(reader)

    def not_integer(self, table: str) -> ImportFormatError:
        """The one-line refusal of a table holding a value that is not an integer."""
        return ImportFormatError(f"{self.path}: table {table} holds a value that is not an integer")

    def _adbc_connection(self, new: bool = False) -> adbc.AdbcConnection:
        """The export's ADBC connection (`new`: one more, for a reader thread; it closes it)."""
        if self._adbc is None:
            db = adbc_driver_sqlite.connect(self.uri)
            self._adbc = (db, _mapped(adbc.AdbcConnection(db)))
        return _mapped(adbc.AdbcConnection(self._adbc[0])) if new else self._adbc[1]

    def close(self) -> None:
        for reader in list(self._readers):  # a stream left unfinished: its thread ends first
            reader.stop()
        self._readers.clear()
        self.con.close()
        if self._adbc is not None:
            self._adbc[1].close()
            self._adbc[0].close()
            self._adbc = None


def _mapped(con: adbc.AdbcConnection) -> adbc.AdbcConnection:
    """con, reading the file's pages through mmap (MMAP_BYTES)."""
    stmt = adbc.AdbcStatement(con)
    try:
        stmt.set_sql_query(f"PRAGMA mmap_size = {MMAP_BYTES}")
        stmt.execute_update()
    finally:
        stmt.close()
    return con


class _Prefetch:
    """A query's record batches, read on a daemon thread into a queue of PREFETCH batches; an
    error is handed over as the last item. The thread owns the connection and closes it."""

    _END = object()

    def __init__(self, con: adbc.AdbcConnection, sql: str) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=PREFETCH)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(con, sql), daemon=True,
                                        name="paradise-nsys-read")
        self._thread.start()

    def _read(self, con: adbc.AdbcConnection, sql: str) -> None:
        try:
            stmt = adbc.AdbcStatement(con)
            reader = None
            try:
                stmt.set_options(**{"adbc.sqlite.query.batch_rows": str(BATCH_ROWS)})
                stmt.set_sql_query(sql)
                handle, _ = stmt.execute_query()
                reader = pa.RecordBatchReader._import_from_c(handle.address)
                for batch in reader:
                    if batch.num_rows and not self._put(batch):
                        return
            finally:
                if reader is not None:
                    reader.close()
                stmt.close()
            self._put(self._END)
        except BaseException as exc:  # handed to the caller, who refuses it naming the table
            self._put(exc)
        finally:
            con.close()

    def _put(self, item: object) -> bool:
        while not self._stopped.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def __iter__(self) -> Iterator[pa.RecordBatch | BaseException]:
        while True:
            item = self._queue.get()
            if item is self._END:
                return
            yield item
            if isinstance(item, BaseException):
                return

    def stop(self) -> None:
        """Ends the thread (its batches not taken are dropped) and waits for it."""
        self._stopped.set()
        self._thread.join()


def _ints(col: pa.Array, null: int = -1) -> np.ndarray:
    """An int64 column as numpy, NULL read as `null`."""
    values = to_numpy(col, np.int64)
    return np.where(validity(col), values, null) if col.null_count else values


def _where(where: str) -> str:
    return f" WHERE {where}" if where else ""


def _damaged(path: Path, exc: Exception) -> ImportFormatError:
    return ImportFormatError(f"{path}: damaged SQLite database ({str(exc).splitlines()[0] if str(exc) else exc})")


def check_sqlite_file(src: Path, path: Path) -> None:
    """Refuses what is not a whole SQLite file: empty, another format, or cut short (messages name `path`)."""
    with open(src, "rb") as f:
        head = f.read(100)
    if not head:
        raise ImportFormatError(f"{path}: empty file, not an Nsight Systems SQLite export")
    if not head.startswith(SQLITE_MAGIC):
        raise ImportFormatError(f"{path}: not a SQLite database (export the report with "
                                "`nsys export --type sqlite`)")
    if len(head) < 100:
        raise TruncatedTrace(f"{path}: truncated SQLite file (header cut short)")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    size = src.stat().st_size
    if pages and size < page * pages:
        raise TruncatedTrace(f"{path}: truncated SQLite file ({size} of {page * pages} bytes)")


def open_export(src: Path, path: Path | None = None) -> Export:
    """The export at src, opened read-only; refuses foreign databases and unknown schema versions.
    Messages name `path` (the .nsys-rep a temporary export was made from), else src."""
    path = path or src
    check_sqlite_file(src, path)
    uri = f"file:{quote(str(src.resolve()))}?mode=ro&immutable=1"
    try:
        con = sqlite3.connect(uri, uri=True, check_same_thread=False)
        con.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise _damaged(path, exc) from None
    exp = Export(path=path, con=con, version="", product="", uri=uri)
    try:
        _check_version(exp, names)
        if "StringIds" not in names:
            raise ImportFormatError(f"{path}: Nsight Systems export without its string table (table StringIds missing)")
        for table, needed in EVENT_TABLES.items():
            if table not in names:
                continue
            cols = {r[1] for r in exp.query(f'PRAGMA table_info("{table}")')}
            missing = [c for c in needed if c not in cols]
            if missing:
                raise ImportFormatError(f"{path}: table {table} lacks column(s) {', '.join(missing)}")
            exp.tables[table] = cols
        if not exp.tables:
            raise ImportFormatError(f"{path}: no CUDA, NVTX, OS runtime or MPI event table "
                                    f"(looked for {', '.join(EVENT_TABLES)})")
    except BaseException:
        con.close()
        raise
    return exp


def _check_version(exp: Export, names: set[str]) -> None:
    table = next((t for t in META_TABLES if t in names), None)
    if table is None:
        raise ImportFormatError(f"{exp.path}: not an Nsight Systems export (no {' or '.join(META_TABLES)} table)")
    meta = dict(exp.query(f'SELECT name, value FROM "{table}"'))
    exp.product = str(meta.get("EXPORT_PRODUCT_NAME", ""))
    exp.version = str(meta.get("EXPORT_SCHEMA_VERSION", ""))
    if "Nsight Systems" not in exp.product:
        raise ImportFormatError(f"{exp.path}: not an Nsight Systems export (EXPORT_PRODUCT_NAME is "
                                f"{exp.product[:60]!r})")
    major = str(meta.get("EXPORT_SCHEMA_VERSION_MAJOR", exp.version.split(".")[0]))
    if not major.isdigit() or int(major) not in KNOWN_MAJORS:
        raise SchemaVersionError(f"{exp.path}: Nsight export schema version {exp.version[:30] or 'missing'} is not "
                                 f"one this importer reads (majors {', '.join(map(str, KNOWN_MAJORS))})")


def export_report(path: Path, tmpdir: Path) -> Path:
    """A .nsys-rep exported to SQLite with `nsys` into tmpdir; one line says how when nsys is missing."""
    target = tmpdir / (path.stem + ".sqlite")
    hint = f"nsys export --type sqlite --output {target.name} {path}"
    nsys = shutil.which("nsys")
    if nsys is None:
        raise ImportFormatError(f"{path}: an Nsight Systems report; `nsys` is not on PATH to export it: run "
                                f"`{hint}` and import the .sqlite")
    tmpdir.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([nsys, "export", "--type", "sqlite", "--output", str(target), str(path)],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0 or not target.is_file():
        tail = (r.stderr or r.stdout).strip().splitlines()
        raise ImportFormatError(f"{path}: `nsys export --type sqlite` failed ({tail[-1] if tail else r.returncode})")
    return target
