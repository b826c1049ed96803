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

    def close(self) -> None: ...


def load_sql(name: str) -> str:
    """The text of paradise/sql/<name>.sql."""
    return resources.files("paradise.sql").joinpath(f"{name}.sql").read_text()


def get_engine(trace: TraceHandle, engine: str = "duckdb", scheduler: str | None = None) -> Engine:
    """The engine by name: 'duckdb' (embedded default) or 'dask' (cluster)."""
    if engine == "duckdb":
        from paradise.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine(trace)
    if engine == "dask":
        from paradise.engines.dask_engine import DaskEngine

        return DaskEngine(trace, scheduler=scheduler)
    raise ValueError(f"unknown engine {engine!r} (choose duckdb or dask)")
