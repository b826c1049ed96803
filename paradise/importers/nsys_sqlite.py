"""Opens an Nsight Systems SQLite export read-only and checks it is one this importer reads.

Why a module of its own: every refusal (not SQLite, truncated, a foreign database, a schema
version or a table this importer does not know) is decided here, before any row is read, as one
line naming the file and what is missing. `.nsys-rep` reports are exported with `nsys` when it is
on PATH.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow._compute import call_function

from paradise.errors import ImportFormatError, SchemaVersionError, TruncatedTrace
from paradise.importers.kineto_arrow import from_numpy, strings

SQLITE_MAGIC = b"SQLite format 3\x00"
KNOWN_MAJORS = (2, 3)
"""Export schema majors read and tested: 2.9 (Nsight Systems 2022.2) and 3.13 (2024.5)."""
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
"""Where the export writes its product and schema version (3.x name first, then 2.x)."""
REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
TEXT_SEP = "\x1f"
"""Joins a batch's texts (ASCII unit separator); a batch whose texts hold it is read row by row."""
BATCH_ROWS = 65_536
"""Rows fetched from SQLite at a time: one batch of Python tuples is all that ever exists."""

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
    tables: dict[str, set[str]] = field(default_factory=dict)

    def has(self, table: str) -> bool:
        return table in self.tables

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        """A small query's rows (metadata tables, aggregates)."""
        try:
            return self.con.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, exc) from None

    def int_columns(self, table: str, exprs: list[str], where: str = "") -> Iterator[list[np.ndarray]]:
        """Integer columns of a table, BATCH_ROWS rowids at a time, without a Python object per value.

        Why: building one tuple per row is most of the cost of fetchmany; SQLite's group_concat
        joins a batch's values of each column into one text in C, and numpy parses it in C. The
        aggregates of one query see the rows in the same order, so the columns stay aligned.
        NULL reads as -1; a value that is not an integer is refused, naming the table.
        """
        for _, _, cols, _ in self._concat(table, exprs, None, where):
            yield cols

    def text_columns(self, table: str, exprs: list[str], text: str,
                     where: str = "") -> Iterator[tuple[list[np.ndarray], pa.Array]]:
        """int_columns plus one text column (Arrow strings, NULL kept), joined in SQLite, split in Arrow."""
        for first, last, cols, joined in self._concat(table, [*exprs, f"({text}) IS NULL"], text, where):
            n = cols[0].size
            texts = call_function("split_pattern", [strings([joined or ""])],
                                  pc.SplitPatternOptions(TEXT_SEP)).flatten()
            if len(texts) != n:  # a text holding the separator: this batch row by row
                sql = f"SELECT {text} FROM {table} WHERE rowid BETWEEN ? AND ?{_and(where)} ORDER BY rowid"
                texts = strings([r[0] if isinstance(r[0], str) else None for r in self.query(sql, (first, last))])
            null = from_numpy(cols[-1].astype(np.bool_))
            yield cols[:-1], call_function("if_else", [null, pa.nulls(n, pa.string()), texts])

    def _concat(self, table: str, exprs: list[str], text: str | None,
                where: str) -> Iterator[tuple[int, int, list[np.ndarray], str | None]]:
        """(first rowid, last rowid, int columns, joined text) per batch of rowids."""
        lo, hi = self.query(f"SELECT min(rowid), max(rowid) FROM {table}")[0]
        if lo is None:
            return
        agg = [f"group_concat(ifnull({e}, -1))" for e in exprs]
        if text is not None:
            agg.append(f"group_concat(ifnull(CAST({text} AS TEXT), ''), char({ord(TEXT_SEP)}))")
        sql = f"SELECT count(*), {', '.join(agg)} FROM {table} WHERE rowid BETWEEN ? AND ?{_and(where)}"
        for first in range(int(lo), int(hi) + 1, BATCH_ROWS):
            last = first + BATCH_ROWS - 1
            row = self.query(sql, (first, last))[0]
            if not row[0]:
                continue
            with warnings.catch_warnings():  # numpy warns (and stops) at text that is not an integer
                warnings.simplefilter("ignore")
                cols = [np.fromstring(t, dtype=np.int64, sep=",") for t in row[1:1 + len(exprs)]]
            if any(c.size != row[0] for c in cols):
                raise ImportFormatError(f"{self.path}: table {table} holds a value that is not an integer "
                                        f"(in rowids {first} to {last})")
            yield first, last, cols, (row[-1] if text is not None else None)

    def close(self) -> None:
        self.con.close()


def _and(where: str) -> str:
    return f" AND ({where})" if where else ""


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
        names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise _damaged(path, exc) from None
    exp = Export(path=path, con=con, version="", product="")
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
