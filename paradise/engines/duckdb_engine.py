"""The embedded default engine: DuckDB streaming SQL over the trace's Parquet files.

DuckDB runs under a memory limit (DUCKDB_SHARE of the analysis' budget, paradise.memory)
and spills joins, sorts and aggregations that need more into a temporary directory of its own,
removed on close; a query that cannot finish even so raises OutOfMemory with what to do instead.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from paradise.engines import load_sql
from paradise.engines.summary import summarized
from paradise.errors import OutOfMemory, TruncatedTrace, disk_full
from paradise.format import ADDED_COLUMNS, SCHEMA
from paradise.memory import DUCKDB_SHARE, default_memory_limit
from paradise.scratch import make_spill_dir
from paradise.store import TraceHandle
from paradise.store.clock import corrected_sql
from paradise.store.connection import cursor_of, database
from paradise.units import binary_size

SPILL_FULL_MARK = "max_temp_directory_size"
"""Named in DuckDB's out-of-memory text when it could not write a block to its spill directory (the
setting defaults to the free space of that directory's disk): the disk is full, not the memory."""


def damaged_file_error(exc: BaseException, files: tuple[Path, ...] | list[Path]) -> BaseException:
    """After a failed read: the trace file pyarrow cannot decode either, as damaged input (one line,
    exit 2); when every file decodes, the error unchanged (a bug, reported with its traceback).
    Runs only on the error path, so valid traces pay nothing for it."""
    if isinstance(exc, (duckdb.BinderException, duckdb.ParserException, duckdb.CatalogException)):
        return exc
    import pyarrow.parquet as pq

    for f in files:
        try:
            for _ in pq.ParquetFile(f).iter_batches(batch_size=1 << 16):
                pass
        except Exception as bad:  # noqa: BLE001 - any decoding failure means damaged data
            first = (str(bad).splitlines() or [type(bad).__name__])[0].replace(str(f), "").strip(" :")
            return TruncatedTrace(f"{f}: damaged Parquet data ({first[:120]})")
    return exc


def _file_list(files: list[str]) -> str:
    return "[" + ", ".join("'" + f.replace("'", "''") + "'" for f in files) + "]"


def _added_columns() -> str:
    """An empty relation of the columns later minor versions added (format.ADDED_COLUMNS): united by
    name with the files, it gives a trace of an older minor those columns as nulls (a file that has
    them keeps its values), so every query may name them."""
    cols = ", ".join(f"NULL::{_SQL_TYPES[str(SCHEMA.field(c).type)]} AS {c}" for c in ADDED_COLUMNS)
    return f" UNION ALL BY NAME SELECT {cols} WHERE false"


_SQL_TYPES = {"int64": "BIGINT", "int32": "INTEGER", "string": "VARCHAR"}


def _files_rows(files: list[str], same_columns: bool, extra: str = "") -> str:
    """The files' rows (with `extra` columns): as they are when they have the same columns, the added
    ones among them; else their schemas united by name, the added columns null where missing."""
    if same_columns:
        return f"SELECT *{extra} FROM read_parquet({_file_list(files)})"
    return f"SELECT *{extra} FROM read_parquet({_file_list(files)}, union_by_name = true)" + _added_columns()


def _corrected_rows(files: list[str], corrections: dict[str, tuple[int, int, float]], same_columns: bool) -> str:
    """The files' rows with each file's clock correction (paradise.store.clock.corrected_sql) added to
    its times. No join, so the rows keep the files' order."""
    return (f"SELECT r.* EXCLUDE (_file) REPLACE ({corrected_sql(files, corrections)}) FROM ("
            + _files_rows(files, same_columns, ", file_index::BIGINT AS _file") + ") r")


def _may_hold_pieces(files: list[str]) -> bool:
    import pyarrow.parquet as pq

    from paradise.store import may_hold_pieces

    return any(may_hold_pieces(pq.ParquetFile(f)) for f in files)


def events_rows_sql(files: list[str], corrections: dict[str, tuple[int, int, float]] | None = None,
                    same_columns: bool = False) -> str:
    """The query behind the `events` view over `files` (events_view_sql): their rows, each file's
    clock correction applied; `same_columns`: the files are known to have the same columns
    (TraceHandle.same_columns), so they are read without uniting their schemas."""
    named = set(files)  # once: a range step builds this view too, over a trace of up to 10^4 files
    mine = {f: c for f, c in (corrections or {}).items() if f in named}
    if mine:
        return _corrected_rows(files, mine, same_columns)
    return _files_rows(files, same_columns)


def events_view_sql(files: list[str], corrections: dict[str, tuple[int, int, float]] | None = None,
                    pieces: bool | None = None, same_columns: bool = False) -> str:
    """The one place file paths enter SQL text (through events_rows_sql); everything else is bound
    parameters. The views:
    `events` (the trace's rows, per-PE clock corrections applied: the only place they are),
    `pieced` (the executions that ran in pieces, events_pieced.sql: empty when `pieces` is false, as
    the files' footers tell when not given), `intervals` (each PE's running intervals and idle rows,
    events_running.sql: in the trace's row order when there are no pieces), `running` (its rows
    other than idle), `intervals_by_time` (it in (pe, t0) order) and `training_rows`
    (events_training.sql); and the macro lane(kind, stream, tid) (events_lane.sql)."""
    rows = events_rows_sql(files, corrections, same_columns)
    if pieces is None:
        pieces = _may_hold_pieces(files)
    pieced = load_sql("events_pieced")
    if not pieces:
        pieced = f"SELECT * FROM ({pieced}) WHERE false"
    return (
        f"CREATE OR REPLACE VIEW events AS {rows};\n"
        f"CREATE OR REPLACE VIEW pieced AS {pieced};\n"
        "CREATE OR REPLACE VIEW intervals AS " + load_sql("events_running") + ";\n"
        "CREATE OR REPLACE VIEW running AS SELECT * FROM intervals WHERE kind <> 'idle';\n"
        "CREATE OR REPLACE VIEW intervals_by_time AS SELECT * FROM intervals ORDER BY pe, t0;\n"
        "CREATE OR REPLACE VIEW training_rows AS " + load_sql("events_training") + ";\n"
        + load_sql("events_lane")
    )


def create_views(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Runs the views' SQL with DuckDB's Parquet footer cache on: each CREATE VIEW binds `events`
    again, which reads every file's footer (10^8 torch rows, 8 files: 0.25 CPU s uncached, 0.03 s
    cached; docs/benchmarks.md run 30). The cache is off again after, so that no later query reads a
    footer cached before a file at the same path was rewritten (the event layer's partition files)."""
    con.execute("SET parquet_metadata_cache = true")
    try:
        con.execute(sql)
    finally:
        con.execute("RESET parquet_metadata_cache")


KEPT_VIEWS = {"training_rows": "events_training"}
"""Views the DuckDB engine replaces by a table of their rows the first time a query reads them: a
small part of the trace that several queries read (each would scan the files again)."""


class DuckDBEngine:
    """One in-memory DuckDB connection with an `events` view over the trace files. Queries from
    other threads than the creator's run on their own cursor (a DuckDB connection serves one
    thread at a time); the view is shared."""

    def __init__(self, trace: TraceHandle, files: list[str] | None = None, threads: int | None = None,
                 memory_limit: int | None = None, spill_dir: str | Path | None = None) -> None:
        self.trace = trace
        self.memory_limit = int(memory_limit or default_memory_limit())
        """Bytes the whole analysis may use (DuckDB gets DUCKDB_SHARE of it); the event layer sizes its
        own buffers from it."""
        self.spill_dir: str | None = str(spill_dir) if spill_dir is not None else None
        """Where DuckDB spills: a directory of the caller's (kept on close), else one of its own made
        before the first query and removed on close."""
        self._own_spill = spill_dir is None
        self._spill_set = False
        self._scratch: list[str] = []
        self.con = database()
        self.con.execute("SET memory_limit = $m", {"m": f"{int(self.memory_limit * DUCKDB_SHARE)}B"})
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        files = files if files is not None else trace.sql_files()
        self.files = files
        pieces = trace.may_hold_pieces if files == trace.sql_files() else None
        self._same_columns = trace.same_columns and set(files) <= set(trace.sql_files())
        create_views(self.con, events_view_sql(files, trace.corrections, pieces, self._same_columns))
        self._owner = threading.get_ident()
        self._cursors: dict[int, duckdb.DuckDBPyConnection] = {}
        self._lock = threading.Lock()
        self._kept: set[str] = set()
        self._keep_lock = threading.Lock()
        self.native_steps = True
        """The event layer may keep a one-bucket exec graph as tables of this database (no Parquet round trip)."""
        self.thread_safe = True
        """paradise.analyses.runner may run analyses on this engine from several threads."""

    def _con(self) -> duckdb.DuckDBPyConnection:
        ident = threading.get_ident()
        if ident == self._owner:
            return self.con
        with self._lock:
            cur = self._cursors.get(ident)
            if cur is None:
                cur = self._cursors[ident] = cursor_of(self.con)
        return cur

    def _spill(self) -> None:
        """Gives DuckDB its own spill directory before the first query (not DuckDB's default, `.tmp`
        in the working directory: nothing outside the chosen output is written)."""
        with self._lock:
            if self._own_spill and self.spill_dir is None:
                self.spill_dir = make_spill_dir()
                self.con.execute("SET temp_directory = $d", {"d": self.spill_dir})
            elif not self._own_spill and not self._spill_set:
                self.con.execute("SET temp_directory = $d", {"d": self.spill_dir})
                self._spill_set = True

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turns DuckDB's out-of-memory failure (after spilling) into one line saying what to do."""
        self._spill()
        try:
            yield
        except duckdb.OutOfMemoryException as exc:
            raise self._out_of_memory(exc) from None
        except duckdb.Error as exc:
            bad = damaged_file_error(exc, self.trace.files)
            if bad is exc and isinstance(exc, duckdb.IOException) and disk_full(exc):
                raise self.scratch_unwritable(exc) from None
            if bad is exc and isinstance(exc, duckdb.IOException) and not self._own_spill:
                raise OSError(f"spilling to {self.spill_dir} failed: {str(exc).splitlines()[0][:120]}") from None
            raise bad from None

    def scratch_unwritable(self, exc: BaseException) -> OutOfMemory:
        """The one line for a spill or partition file the disk refused (full, or over a file size limit)."""
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        return OutOfMemory(f"{self.trace.path}: could not write under the spill directory {self.spill_dir} ({first}); "
                           "set TMPDIR to a directory on a disk with more free space")

    def _out_of_memory(self, exc: duckdb.OutOfMemoryException) -> OutOfMemory:
        """The one line for a query that failed after spilling: a full spill disk (DuckDB could not
        offload a block: its temp size cap is the disk's free space) needs another TMPDIR; anything
        else needs more memory or less work."""
        text = str(exc)
        first = (text.strip().splitlines() or [""])[0]
        if SPILL_FULL_MARK in text:
            where = ("set TMPDIR to a directory on a disk with more free space, or give a larger --memory-limit "
                     "so that less spills" if self._own_spill else "free space on that disk")
            return OutOfMemory(f"{self.trace.path}: the spill directory {self.spill_dir} ran out of disk ({first}); "
                               + where)
        return OutOfMemory(
            f"{self.trace.path}: needs more memory than --memory-limit {binary_size(self.memory_limit)} allows, "
            f"even spilling to disk ({first}); try `paradise analyze --only overview` for the first "
            "report, a larger --memory-limit, or --engine dask on a cluster")

    def _keep_views(self, text: str) -> None:
        """Replaces each of KEPT_VIEWS that `text` reads, on first use, by a table of its rows."""
        for view, name in KEPT_VIEWS.items():
            if view not in self._kept and re.search(rf"\b(FROM|JOIN) {view}\b", text):
                with self._keep_lock:
                    if view not in self._kept:
                        with self._guard():
                            self._con().execute(f"DROP VIEW {view}; CREATE TABLE {view} AS {load_sql(name)}")
                        self._kept.add(view)

    def sql(self, text: str, **params: Any) -> pa.Table:
        self._keep_views(text)
        with self._guard():
            return self._con().sql(text, params=params or None).to_arrow_table()

    def query(self, name: str, **params: Any) -> pa.Table:
        rows = summarized(self.trace, self.files, name, params)  # the files' footers, where they answer it
        return rows if rows is not None else self.sql(load_sql(name), **params)

    def materialize(self, table: str, name: str, *, append: bool = False, **params: Any) -> None:
        """CREATE TABLE `table` AS the query (INSERT INTO it with `append`), in this engine's
        database (seen by every cursor; DuckDB's buffer manager spills it under its memory limit)."""
        if not table.isidentifier():
            raise ValueError(f"not a table name: {table!r}")
        verb = f"INSERT INTO {table}" if append else f"CREATE OR REPLACE TABLE {table} AS"
        self._keep_views(load_sql(name))
        with self._guard():
            self._con().execute(f"{verb} {load_sql(name)}", params or None)

    def execute(self, statement: str) -> None:
        """A statement of the event layer's own (a view over its partition files), in this database."""
        with self._guard():
            self._con().execute(statement)

    def step_memory(self) -> int:
        """Bytes one step of the event layer may use: DuckDB's share of the budget."""
        return int(self.memory_limit * DUCKDB_SHARE)

    def scratch_dir(self, prefix: str) -> str:
        """A new directory under the spill directory for the event layer's partition files, removed on close."""
        self._spill()
        Path(str(self.spill_dir)).mkdir(parents=True, exist_ok=True)
        path = tempfile.mkdtemp(prefix=prefix, dir=self.spill_dir)
        self._scratch.append(path)
        return path

    def run_steps(self, fn: Any, items: list[dict[str, Any]], files: list[list[str]] | None = None,
                  step_bytes: int | None = None) -> list[Any]:
        """fn(connection, **item) for every item, results in order. `files` (per item, the files that
        hold the rows it reads): a step given some of the engine's files reads an `events` of those
        only, on a cursor of its own (a range step's query over the view of every file opens each
        file: 0.6 ms a file per query, 0.65 s for a range of 2 PEs among 1024 files); given none or
        all, the engine's. Steps that do not depend on one another and each need `step_bytes`
        (given) run steps_at_once(step_bytes) at a time, each on its own cursor; else one after
        another (each step uses every thread)."""
        k = min(self.steps_at_once(step_bytes), len(items)) if step_bytes else 1
        subsets = [self._subset(f) for f in files] if files is not None else [None] * len(items)
        if k <= 1:
            return [self._step(fn, item, subset) if subset else self._owned_step(fn, item)
                    for item, subset in zip(items, subsets)]
        with self._threads_shared(k), ThreadPoolExecutor(k, thread_name_prefix="paradise-step") as pool:
            return list(pool.map(lambda args: self._step(fn, *args), zip(items, subsets)))

    def _subset(self, files: list[str]) -> list[str] | None:
        """`files` in this engine's order when they are some but not all of its files, else None."""
        wanted = {str(f) for f in files}
        subset = [f for f in self.files if f in wanted]
        return subset if subset and len(subset) < len(self.files) and len(subset) == len(wanted) else None

    def _owned_step(self, fn: Any, item: dict[str, Any]) -> Any:
        """One step in this thread's connection to the engine, over the engine's `events`."""
        with self._guard():
            return fn(self._con(), **item)

    def threads(self) -> int:
        """DuckDB's threads: the engine's `threads`, else DuckDB's count of the CPUs it may use."""
        return int(self._con().execute("SELECT current_setting('threads')").fetchall()[0][0])

    @contextmanager
    def _threads_shared(self, k: int) -> Iterator[None]:
        """DuckDB's threads divided between `k` steps at once meanwhile, then restored."""
        con = self._con()
        before = self.threads()
        con.execute(f"SET threads = {max(1, before // k)}")
        try:
            yield
        finally:
            con.execute(f"SET threads = {before}")

    def steps_at_once(self, step_bytes: int) -> int:
        """How many steps of `step_bytes` each run together: as many as DuckDB's share of the budget
        holds, at most one per DuckDB thread (a step's numpy and Arrow work runs on one thread)."""
        return max(1, min(self.step_memory() // max(int(step_bytes), 1), self.threads()))

    def _step(self, fn: Any, item: dict[str, Any], files: list[str] | None = None) -> Any:
        """One step on a cursor of its own, closed after (the pool's threads end); with `files`, its
        `events` is a temporary view of those files (it shadows the engine's on this cursor only)."""
        cur = cursor_of(self.con)
        try:
            with self._guard():
                if files:
                    cur.execute("CREATE TEMP VIEW events AS "
                                + events_rows_sql(files, self.trace.corrections, self._same_columns))
                return fn(cur, **item)
        finally:
            cur.close()

    def batches(self, name: str, batch_rows: int = 1 << 20, **params: Any) -> pa.RecordBatchReader:
        """A stage-1 query's result streamed in record batches of up to `batch_rows` rows, for
        consumers that copy it into arrays of their own (or a file) and should not hold the whole
        Arrow table as well."""
        self._keep_views(load_sql(name))
        with self._lock:  # the stream's own cursor: an open result blocks its cursor for other queries
            cur = cursor_of(self.con)
        with self._guard():
            reader = cur.sql(load_sql(name), params=params or None).to_arrow_reader(batch_size=batch_rows)
        return pa.RecordBatchReader.from_batches(reader.schema, self._guarded(reader, cur))

    def _guarded(self, reader: pa.RecordBatchReader, cur: duckdb.DuckDBPyConnection) -> Iterator[pa.RecordBatch]:
        """The reader's batches, its errors while streaming turned into one line as a query's are;
        the stream's cursor is closed at its end."""
        try:
            with self._guard():
                yield from reader
        finally:
            cur.close()

    def close(self) -> None:
        with self._lock:
            for cur in self._cursors.values():
                cur.close()
            self._cursors.clear()
        self.con.close()
        for path in self._scratch:
            shutil.rmtree(path, ignore_errors=True)
        self._scratch.clear()
        if self._own_spill and self.spill_dir is not None:
            shutil.rmtree(self.spill_dir, ignore_errors=True)
            self.spill_dir = None

    def __enter__(self) -> DuckDBEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
