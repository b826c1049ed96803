"""The embedded default engine: DuckDB streaming SQL over the trace's Parquet files."""

from __future__ import annotations

import threading
from typing import Any

import duckdb
import pyarrow as pa

from paradise.engines import load_sql
from paradise.store import TraceHandle


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
        return self._con().sql(text, params=params or None).to_arrow_table()

    def query(self, name: str, **params: Any) -> pa.Table:
        return self.sql(load_sql(name), **params)

    def batches(self, name: str, batch_rows: int = 1 << 20, **params: Any) -> pa.RecordBatchReader:
        """A stage-1 query's result streamed in record batches of up to `batch_rows` rows, for
        consumers that copy it into arrays of their own (or a file) and should not hold the whole
        Arrow table as well."""
        return self._con().sql(load_sql(name), params=params or None).to_arrow_reader(batch_size=batch_rows)

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
