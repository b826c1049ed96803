"""The embedded default engine: DuckDB streaming SQL over the trace's Parquet files."""

from __future__ import annotations

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
    """One in-memory DuckDB connection with an `events` view over the trace files."""

    def __init__(self, trace: TraceHandle, files: list[str] | None = None, threads: int | None = None) -> None:
        self.trace = trace
        self.con = duckdb.connect(":memory:")
        self.con.execute("SET enable_progress_bar = false")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        self.con.execute(events_view_sql(files if files is not None else trace.sql_files()))

    def sql(self, text: str, **params: Any) -> pa.Table:
        return self.con.sql(text, params=params or None).to_arrow_table()

    def query(self, name: str, **params: Any) -> pa.Table:
        return self.sql(load_sql(name), **params)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> DuckDBEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
