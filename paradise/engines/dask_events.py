"""The event layer's engine on a Dask cluster: one DuckDB in a worker process (a Dask actor) that
holds the event tables (exec graph, object steps) and answers the `-- merge: client` queries, so
that the client receives results only and never the trace's rows.

The worker sees the trace at the client's path (as for stage-1 tasks) and bounds its DuckDB by
its own memory limit, spilling under it. Calls are polled: a worker that dies or leaves while
the client waits gives one line (EngineUnavailable), never a hang.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from paradise.errors import EngineUnavailable


def no_worker_error(scheduler: str, seconds: float) -> EngineUnavailable:
    """The one line that ends a run whose cluster has had no worker for `seconds` (tasks and the
    event tables alike)."""
    return EngineUnavailable(f"dask scheduler {scheduler}: no worker for {seconds:.0f} s (all died or left); "
                             "start workers (`dask worker ADDRESS`) or run with --engine duckdb")


class EventTables:
    """Lives on a worker: a DuckDBEngine over the trace, with the event tables it builds."""

    def __init__(self, path: str) -> None:
        from pathlib import Path

        from paradise.engines.duckdb_engine import DuckDBEngine
        from paradise.store import open_trace

        budget = _worker_budget()
        self.engine = DuckDBEngine(open_trace(Path(path), budget), memory_limit=budget)
        self.reader: pa.RecordBatchReader | None = None

    def sql(self, text: str, params: dict[str, Any]) -> pa.Table:
        return self.engine.sql(text, **params)

    def materialize(self, table: str, name: str, append: bool, params: dict[str, Any]) -> None:
        self.engine.materialize(table, name, append=append, **params)

    def execute(self, statement: str) -> None:
        self.engine.execute(statement)

    def open_batches(self, name: str, batch_rows: int, params: dict[str, Any]) -> pa.Schema:
        self.reader = self.engine.batches(name, batch_rows=batch_rows, **params)
        return self.reader.schema

    def next_batch(self) -> pa.RecordBatch | None:
        """The next batch of the open stream, or None at its end."""
        if self.reader is None:
            return None
        try:
            return self.reader.read_next_batch()
        except StopIteration:
            self.reader = None
            return None

    def close(self) -> None:
        self.reader = None
        self.engine.close()


def _worker_budget() -> int | None:
    """The worker's memory limit (the engine's budget; DuckDB gets its share), None outside one."""
    try:
        from distributed import get_worker

        return getattr(get_worker().memory_manager, "memory_limit", None) or None
    except (ImportError, ValueError):
        return None


class RemoteEvents:
    """The client's handle on EventTables: the engine calls of DaskEngine for event-level SQL."""

    def __init__(self, client: Any, path: str, scheduler: str, poll_s: float, no_worker_s: float) -> None:
        self.client, self.scheduler, self.poll_s, self.no_worker_s = client, scheduler, poll_s, no_worker_s
        self.worker: str | None = None
        self._future = client.submit(EventTables, path, actor=True, pure=False)
        self.actor = self._wait(self._future, "starting the event tables")
        self.worker = self.actor._address

    def _workers(self) -> dict[str, Any]:
        try:
            return self.client.scheduler_info().get("workers", {})
        except Exception:  # the scheduler went away
            return {}

    def _alive(self) -> bool:
        return self.worker in self._workers()

    def _wait(self, fut: Any, what: str) -> Any:
        """The call's result, polling every poll_s: a lost actor worker (or, before the actor has
        one, no worker for no_worker_s) stops the run with one line."""
        import time

        since = time.monotonic()
        while True:
            try:
                return fut.result(timeout=self.poll_s)
            except TimeoutError:
                if self.worker is not None and not self._alive():
                    raise EngineUnavailable(
                        f"dask scheduler {self.scheduler}: the worker holding the event tables ({self.worker}) died "
                        f"or left during {what} (out of memory? raise --worker-memory)") from None
                if self.worker is None and self._workers():
                    since = time.monotonic()
                elif self.worker is None and time.monotonic() - since > self.no_worker_s:
                    raise no_worker_error(self.scheduler, self.no_worker_s) from None
            except OSError as exc:  # distributed: "Unable to contact Actor's worker"
                raise EngineUnavailable(f"dask scheduler {self.scheduler}: lost the worker holding the event tables "
                                        f"during {what} ({str(exc).strip().splitlines()[0] if str(exc).strip() else exc!r})"
                                        ) from None

    def _call(self, method: str, what: str, *args: Any) -> Any:
        """actor.method(*args), waited for by _wait."""
        try:
            fut = getattr(self.actor, method)(*args)
        except RuntimeError as exc:  # the actor's task was lost before the call
            raise EngineUnavailable(f"dask scheduler {self.scheduler}: lost the worker holding the event tables "
                                    f"before {what} ({exc})") from None
        return self._wait(fut, what)

    def sql(self, text: str, **params: Any) -> pa.Table:
        return self._call("sql", "a query", text, params)

    def materialize(self, table: str, name: str, *, append: bool = False, **params: Any) -> None:
        self._call("materialize", f"building {table}", table, name, append, params)

    def execute(self, statement: str) -> None:
        self._call("execute", "a statement", statement)

    def batches(self, name: str, batch_rows: int = 1 << 20, **params: Any) -> pa.RecordBatchReader:
        schema = self._call("open_batches", name, name, batch_rows, params)

        def gen() -> Any:
            while (batch := self._call("next_batch", name)) is not None:
                yield batch

        return pa.RecordBatchReader.from_batches(schema, gen())

    def close(self) -> None:
        try:
            if self._alive():
                self._call("close", "closing")
        finally:
            self._future.release()
