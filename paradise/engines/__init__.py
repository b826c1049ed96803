"""Stage-1 engines: named SQL queries over a trace's Parquet files, returned as Arrow tables."""

from __future__ import annotations

from importlib import resources
from typing import Any, Protocol

import pyarrow as pa

from paradise.store import TraceHandle


class Engine(Protocol):
    """What analyses use: run a named stage-1 query (paradise/sql/<name>.sql) with bound params."""

    trace: TraceHandle

    def query(self, name: str, **params: Any) -> pa.Table: ...

    def sql(self, text: str, **params: Any) -> pa.Table: ...

    def materialize(self, table: str, name: str, *, append: bool = False, **params: Any) -> None:
        """Keeps the rows of query `name` as table `table` of the engine, for later queries that
        read it (event-level results built in several statements: the exec graph); `append` adds
        them to the existing table instead (a result built a range of PEs at a time)."""
        ...

    def batches(self, name: str, batch_rows: int = 1 << 20, **params: Any) -> pa.RecordBatchReader:
        """The rows of query `name` streamed in record batches, for consumers that copy them into
        arrays of their own and should not hold the whole table as well."""
        ...

    def run_steps(self, fn: Any, items: list[dict[str, Any]], files: list[list[str]] | None = None,
                  step_bytes: int | None = None) -> list[Any]:
        """fn(duckdb connection, **item) for every item (the event layer's range and bucket steps,
        paradise.events.partitions): in the engine's own connection one after another, or, for
        independent steps of `step_bytes` each, as many at once as the budget holds (DuckDB); or as
        tasks each in a connection over its `files` (Dask); results in order."""
        ...

    def scratch_dir(self, prefix: str) -> str:
        """A new directory for the event layer's partition files (every worker sees it), removed on close."""
        ...

    def step_memory(self) -> int:
        """Bytes one step of run_steps may use (the partitions are sized from it)."""
        ...

    def execute(self, statement: str) -> None:
        """A statement of the event layer's own (the view over its partition files)."""
        ...

    def close(self) -> None: ...


def load_sql(name: str) -> str:
    """The text of paradise/sql/<name>.sql."""
    return resources.files("paradise.sql").joinpath(f"{name}.sql").read_text()


def get_engine(trace: TraceHandle, engine: str = "duckdb", scheduler: str | None = None, **options: Any) -> Engine:
    """The engine by name: 'duckdb' (embedded default) or 'dask' (cluster); options go to its
    constructor (memory_limit for both; spill_dir for DuckDB; workers and worker_memory for a local
    Dask cluster). Commands open engines through paradise.run.open_run, not here."""
    if engine == "duckdb":
        from paradise.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine(trace, memory_limit=options.get("memory_limit"), spill_dir=options.get("spill_dir"))
    if engine == "dask":
        from paradise.engines.dask_engine import DaskEngine

        return DaskEngine(trace, scheduler=scheduler, **options)
    raise ValueError(f"unknown engine {engine!r} (choose duckdb or dask)")

