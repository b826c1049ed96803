"""The embedded default engine: DuckDB streaming SQL over the trace's Parquet files."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from paradise.engines import load_sql
from paradise.errors import TruncatedTrace
from paradise.store import TraceHandle


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


def events_view_sql(files: list[str]) -> str:
    """The one place file paths enter SQL text; everything else is bound parameters."""
    return (
        "CREATE OR REPLACE VIEW events AS SELECT * FROM "
        f"read_parquet({_file_list(files)}, union_by_name = true)"
    )


class DuckDBEngine:
    """One in-memory DuckDB connection with an `events` view over the trace files. Queries from
    other threads than the creator's run on their own cursor (a DuckDB connection serves one
    thread at a time); the view is shared."""

    def __init__(self, trace: TraceHandle, files: list[str] | None = None, threads: int | None = None) -> None:
        self.trace = trace
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET enable_progress_bar = false")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        self.con.execute(events_view_sql(files if files is not None else trace.sql_files()))
        self._owner = threading.get_ident()
        self._cursors: dict[int, duckdb.DuckDBPyConnection] = {}
        self._lock = threading.Lock()
        self.thread_safe = True
        """paradise.analyses.runner may run analyses on this engine from several threads."""

    def _con(self) -> duckdb.DuckDBPyConnection:
        ident = threading.get_ident()
        if ident == self._owner:
            return self.con
        with self._lock:
            cur = self._cursors.get(ident)
            if cur is None:
                cur = self._cursors[ident] = self.con.cursor()
        return cur

    def sql(self, text: str, **params: Any) -> pa.Table:
        try:
            return self._con().sql(text, params=params or None).to_arrow_table()
        except duckdb.Error as exc:
            raise damaged_file_error(exc, self.trace.files) from None

    def query(self, name: str, **params: Any) -> pa.Table:
        return self.sql(load_sql(name), **params)

    def batches(self, name: str, **params: Any) -> pa.RecordBatchReader:
        """A stage-1 query's result streamed in record batches, for consumers that copy it into
        arrays of their own and should not hold the whole Arrow table as well."""
        try:
            return self._con().sql(load_sql(name), params=params or None).to_arrow_reader(batch_size=1 << 20)
        except duckdb.Error as exc:
            raise damaged_file_error(exc, self.trace.files) from None

    def close(self) -> None:
        with self._lock:
            for cur in self._cursors.values():
                cur.close()
            self._cursors.clear()
        self.con.close()

    def __enter__(self) -> DuckDBEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
