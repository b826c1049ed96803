"""The cluster engine: the same stage-1 SQL, run per group of files as Dask tasks, merged on the client.

Each task opens its own in-memory DuckDB over its group of files (the same `events` view as
the embedded engine) and returns a partial Arrow table; the client merges the partials by the
query's `-- merge:` rule (paradise.engines.merge). All files of one PE go to the same task, so
per-PE window queries (busy as a union of intervals) stay exact. Workers must see the trace
files at the same paths as the client (a shared file system) and have paradise installed.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from paradise.engines import load_sql
from paradise.engines.merge import merge_partials, parse_merge_rule
from paradise.errors import EngineUnavailable
from paradise.store import TraceHandle

FILES_PER_TASK = 16
"""Files per task: few enough to spread a 1000-PE trace over a cluster, enough to amortise start-up."""
CONNECT_TIMEOUT_S = 5
"""How long to wait for a scheduler before calling it unreachable."""
LOCAL_WORKERS = 2
"""Workers of the LocalCluster started when no scheduler is given (tests, small machines)."""


def run_group(files: list[str], text: str, params: dict[str, Any]) -> pa.Table:
    """One task: a stage-1 query over one group of files, in a fresh DuckDB connection."""
    import duckdb

    from paradise.engines.duckdb_engine import events_view_sql

    con = duckdb.connect(":memory:")
    try:
        con.execute("SET threads = 1")  # one core per task: the cluster provides the parallelism
        con.execute(events_view_sql(files))
        return con.sql(text, params=params or None).to_arrow_table()
    finally:
        con.close()


def group_files(trace: TraceHandle, files_per_task: int = FILES_PER_TASK) -> list[list[str]]:
    """Files in groups of about files_per_task, never splitting the files of one PE."""
    by_pe: dict[Any, list[str]] = {}
    units: list[list[str]] = []
    for f, meta in zip(trace.files, trace.file_metadata):
        pe = meta.get("pe")
        if pe is None:
            units.append([str(f)])  # a merged file: its own unit
        else:
            by_pe.setdefault(pe, []).append(str(f))
    units = [by_pe[pe] for pe in sorted(by_pe)] + units
    groups: list[list[str]] = []
    current: list[str] = []
    for unit in units:
        current.extend(unit)
        if len(current) >= max(1, files_per_task):
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def _why(exc: Exception) -> str:
    """One line saying why a scheduler could not be reached."""
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else type(exc).__name__
    if isinstance(exc, ValueError):
        return f"not a scheduler address ({first})"
    if isinstance(exc, (OSError, TimeoutError)):
        return f"unreachable within {CONNECT_TIMEOUT_S} s ({first})"
    return f"cannot connect ({type(exc).__name__}: {first})"


class DaskEngine:
    """Stage-1 queries as Dask tasks over groups of files; `.sql()` runs on the client."""

    def __init__(
        self,
        trace: TraceHandle,
        scheduler: str | None = None,
        files_per_task: int = FILES_PER_TASK,
        client: Any = None,
    ) -> None:
        self.trace = trace
        self.groups = group_files(trace, files_per_task)
        self._cluster = None
        self._own_client = client is None
        self._local: Any = None
        self.client = client if client is not None else self._connect(scheduler)

    def _connect(self, scheduler: str | None) -> Any:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - dask is a declared dependency
            raise EngineUnavailable(f"dask engine: dask.distributed is not installed ({exc})") from None
        if scheduler is None:
            self._cluster = LocalCluster(
                n_workers=LOCAL_WORKERS, threads_per_worker=1, processes=False, dashboard_address=":0"
            )
            return Client(self._cluster)
        try:
            return Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s")
        except Exception as exc:  # distributed raises many kinds, with long multi-line texts
            raise EngineUnavailable(f"dask scheduler {scheduler}: {_why(exc)}") from None

    def query(self, name: str, **params: Any) -> pa.Table:
        """Runs analyses/sql/<name>.sql per group of files and merges by its `-- merge:` rule."""
        text = load_sql(name)
        rule = parse_merge_rule(text, name)
        if rule.client:
            return self.sql(text, **params)
        futures = self.client.map(
            run_group, self.groups, text=text, params=dict(params), pure=False
        )
        partials = self.client.gather(futures)
        return merge_partials(list(partials), rule, name)

    def sql(self, text: str, **params: Any) -> pa.Table:
        """Ad-hoc SQL that no merge rule describes: DuckDB on the client over all files."""
        if self._local is None:
            from paradise.engines.duckdb_engine import DuckDBEngine

            self._local = DuckDBEngine(self.trace)
        return self._local.sql(text, **params)

    def materialize(self, table: str, name: str, **params: Any) -> None:
        """An event-level table (`-- merge: client` queries): kept in the client's DuckDB."""
        self.sql("SELECT 1")  # opens the client engine
        self._local.materialize(table, name, **params)

    def close(self) -> None:
        if self._local is not None:
            self._local.close()
            self._local = None
        if self._own_client and self.client is not None:
            self.client.close()
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def __enter__(self) -> DaskEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
