"""The cluster engine: the same stage-1 SQL, run per group of files as Dask tasks, merged on the client.

Each task opens its own in-memory DuckDB over its group of files (the same `events` view as
the embedded engine) and returns a partial Arrow table; the client merges the partials by the
query's `-- merge:` rule (paradise.engines.merge). All files of one PE go to the same task, so
per-PE window queries (busy as a union of intervals) stay exact. Workers must see the trace
files at the same paths as the client (a shared file system) and have paradise installed.
The event layer's steps (the exec graph's range, bucket and reader steps, message edges in buckets)
are tasks too (run_steps); `-- merge: client` queries and ad-hoc SQL (the what-if replay's graph,
the report's critical segments) run in one DuckDB on a worker (paradise.engines.dask_events), not
on the client, started on first use.

`scheduler` None or "local" starts a LocalCluster of worker processes, each under a memory limit
(the nanny restarts a worker that exceeds it); "tcp://HOST:PORT" joins an existing cluster
(docs/engines.md). Tasks run through run_tasks(): a task whose worker dies is retried once, then
the run stops with one line; so does a run left without any worker for NO_WORKER_S.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa

from paradise.engines import load_sql
from paradise.engines.dask_events import no_worker_error
from paradise.engines.merge import merge_partials, parse_merge_rule
from paradise.engines.summary import summarized
from paradise.errors import EngineUnavailable
from paradise.store import TraceHandle

FILES_PER_TASK = 16
"""Files per task: few enough to spread a 1000-PE trace over a cluster, enough to amortise start-up."""
TASK_ROW_BYTES = 64
"""Step memory per trace row of a task's files (its DuckDB's sort or hash state: a per-PE window, an
object-step aggregate): a task gets at most step_memory() / TASK_ROW_BYTES rows (whole PEs), so that
its work per row stays the same as the trace grows instead of spilling."""
CONNECT_TIMEOUT_S = 5
"""How long to wait for a scheduler before calling it unreachable."""
FIRST_TRY_S = 1
"""A first connect this short; when it fails, one TCP connect tells a refused port (answered at once:
no scheduler there) from a slow one (tried again for the rest of CONNECT_TIMEOUT_S). A scheduler that
answers within it never sees that probe, which its log would list as a connection closed before
the handshake."""
HANDSHAKE_TIMEOUT_S = 2 * CONNECT_TIMEOUT_S
"""How long to wait for a Client in all (connect, handshake, identity): a port that accepts but
never answers is given up on after this."""
LOCAL_WORKERS = 2
"""Workers of the LocalCluster started when no scheduler is given (tests, small machines)."""
LOCAL = "local"
"""--scheduler value that starts a LocalCluster of worker processes."""
ALLOWED_FAILURES = 1
"""Retries of a task whose worker died (the LocalCluster's scheduler): one, then the run fails."""
POLL_S = 2.0
"""How often a waiting client checks that the cluster still has workers."""
NO_WORKER_S = 120.0
"""A run whose cluster has had no worker for this long stops instead of waiting forever (long enough
for a nanny to restart a worker process on a loaded machine)."""
TASK_DUCKDB_SHARE = 0.5
"""Share of a worker's memory limit that the DuckDB of one task may use before spilling."""
STEP_CPU_ENV = "PARADISE_STEP_CPU"
"""Environment variable: a file that close() writes each task kind's CPU seconds on each worker to
(JSON {worker: {label: [cpu_s, tasks]}}; bench/scale.py reads it to say which step grows)."""
STEP_CPU: dict[str, list[float]] = {}
"""In a worker process: CPU seconds and tasks per task kind (a query's name, a step's function)."""


@contextmanager
def _charged(label: str) -> Iterator[None]:
    """Adds the process's CPU time while the block runs to STEP_CPU[label] (a worker runs one task
    at a time: threads_per_worker=1)."""
    t = time.process_time()
    try:
        yield
    finally:
        cpu = STEP_CPU.setdefault(label, [0.0, 0])
        cpu[0] += time.process_time() - t
        cpu[1] += 1


def step_cpu() -> dict[str, list[float]]:
    """This worker's STEP_CPU (run on every worker by close())."""
    return dict(STEP_CPU)


def run_group(files: list[str], text: str, params: dict[str, Any],
              corrections: dict[str, tuple[int, int, float]] | None = None, label: str = "query",
              same_columns: bool = False) -> pa.Table:
    """One task: a stage-1 query over one group of files, in a connection to its thread's DuckDB
    (`same_columns`: the trace's files share one schema, TraceHandle.same_columns)."""
    from paradise.engines.duckdb_engine import create_views, events_view_sql
    from paradise.store.connection import thread_connection

    with _charged(label):
        con = thread_connection()
        try:
            con.execute("SET threads = 1")  # one core per task: the cluster provides the parallelism
            _task_memory(con)
            create_views(con, events_view_sql(files, corrections, same_columns=same_columns))
            return con.sql(text, params=params or None).to_arrow_table()
        finally:
            con.close()


def run_step(item: tuple[dict[str, Any], list[str]], step: Any,
             corrections: dict[str, tuple[int, int, float]] | None = None, same_columns: bool = False) -> Any:
    """One task: a step of the event layer (paradise.events.partitions), step(connection, **kwargs),
    in a connection to its thread's DuckDB whose `events` view spans the item's files (none: a step
    that reads no trace rows; `same_columns` as run_group's)."""
    from paradise.engines.duckdb_engine import create_views, events_view_sql
    from paradise.store.connection import thread_connection

    kwargs, files = item
    with _charged(task_label(step, kwargs)):
        con = thread_connection()
        try:
            con.execute("SET threads = 1")
            _task_memory(con)
            if files:
                create_views(con, events_view_sql(files, corrections, same_columns=same_columns))
            return step(con, **kwargs)
        finally:
            con.close()


def task_label(step: Any, kwargs: dict[str, Any]) -> str:
    """A step task's kind: its function's name, with the query a reader step runs."""
    name = getattr(step, "__name__", "step")
    return f"{name}:{kwargs['name']}" if isinstance(kwargs.get("name"), str) else name


def _task_memory(con: Any) -> None:
    """Bounds a task's DuckDB by its worker's memory limit, spilling into the worker's directory."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not inside a Dask worker (a direct call)
        return
    limit = getattr(getattr(worker, "memory_manager", None), "memory_limit", None)
    if limit:
        con.execute("SET memory_limit = $m", {"m": f"{int(limit * TASK_DUCKDB_SHARE)}B"})
    con.execute("SET temp_directory = $d", {"d": f"{worker.local_directory}/duckdb-spill"})


def group_files(trace: TraceHandle, files_per_task: int = FILES_PER_TASK,
                max_rows: int | None = None) -> list[list[str]]:
    """Files in groups of about files_per_task and at most max_rows rows (None: no bound), never
    splitting the files of one PE (a PE larger than max_rows is a group of its own)."""
    by_pe: dict[Any, list[tuple[str, int]]] = {}
    units: list[list[tuple[str, int]]] = []
    for f, meta in zip(trace.files, trace.file_metadata):
        pe, rows = meta.get("pe"), int(meta.get("_rows") or 0)
        if pe is None:
            units.append([(str(f), rows)])  # a merged file: its own unit
        else:
            by_pe.setdefault(pe, []).append((str(f), rows))
    units = [by_pe[pe] for pe in sorted(by_pe)] + units
    groups: list[list[str]] = []
    current: list[str] = []
    current_rows = 0
    for unit in units:
        unit_rows = sum(r for _, r in unit)
        if current and max_rows is not None and current_rows + unit_rows > max_rows:
            groups.append(current)
            current, current_rows = [], 0
        current.extend(f for f, _ in unit)
        current_rows += unit_rows
        if len(current) >= max(1, files_per_task):
            groups.append(current)
            current, current_rows = [], 0
    if current:
        groups.append(current)
    return groups


def _why(exc: Exception) -> str:
    """One line saying why a scheduler could not be reached."""
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else type(exc).__name__
    if isinstance(exc, ValueError):
        return f"not a scheduler address ({first})"
    if isinstance(exc, MemoryError):  # distributed read a frame length from a peer's non-Dask answer
        return f"the peer answered, but not in the Dask protocol ({first})"
    if isinstance(exc, ConnectionRefusedError):
        return f"unreachable: connection refused ({first})"
    if isinstance(exc, (OSError, TimeoutError)):  # distributed names its last try's timeout, not the whole wait
        return f"unreachable within {CONNECT_TIMEOUT_S} s ({re.sub(r' after [0-9.]+ ?s$', '', first)})"
    return f"cannot connect ({type(exc).__name__}: {first})"


def _refused(scheduler: str) -> ConnectionRefusedError | None:
    """The refusal of a plain TCP connect to a tcp:// or tls:// scheduler address, if it is refused
    (nothing listens there); None when it connects, times out or is no such address."""
    import socket

    try:
        from distributed.comm.addressing import parse_address, parse_host_port

        scheme, loc = parse_address(scheduler)
        if scheme not in ("tcp", "tls"):
            return None
        host, port = parse_host_port(loc)
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S - FIRST_TRY_S).close()
    except ConnectionRefusedError as exc:
        return exc
    except (OSError, ValueError, TypeError, ImportError):
        return None
    return None


def _client_within(client_cls: Any, scheduler: str) -> Any:
    """A Client of `scheduler`, or one line once HANDSHAKE_TIMEOUT_S pass: distributed's timeout
    covers the TCP connect, not a peer that accepts and never speaks (the wait runs in a thread)."""
    import threading

    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            try:
                box["client"] = client_cls(scheduler, timeout=f"{FIRST_TRY_S}s")
            except (OSError, TimeoutError):
                refused = _refused(scheduler)
                if refused is not None:
                    raise refused from None
                box["client"] = client_cls(scheduler, timeout=f"{CONNECT_TIMEOUT_S - FIRST_TRY_S}s")
        except Exception as exc:  # distributed raises many kinds, with long multi-line texts
            box["error"] = exc

    t = threading.Thread(target=connect, name="paradise-dask-connect", daemon=True)
    t.start()
    t.join(HANDSHAKE_TIMEOUT_S)
    if "client" in box:
        return box["client"]
    if "error" in box:
        raise EngineUnavailable(f"dask scheduler {scheduler}: {_why(box['error'])}")
    raise EngineUnavailable(f"dask scheduler {scheduler}: no scheduler answer within {HANDSHAKE_TIMEOUT_S} s "
                            "(the port accepts connections but does not speak the Dask protocol)")


class DaskEngine:
    """Stage-1 queries as Dask tasks over groups of files; `.sql()` and event tables run on a worker (dask_events)."""

    def __init__(
        self,
        trace: TraceHandle,
        scheduler: str | None = None,
        files_per_task: int = FILES_PER_TASK,
        client: Any = None,
        workers: int = LOCAL_WORKERS,
        worker_memory: int | None = None,
        memory_limit: int | None = None,
    ) -> None:
        self.trace = trace
        self.files_per_task = files_per_task
        self._groups: list[list[str]] | None = None
        self.memory_limit = memory_limit
        """Bytes the client may use. The event tables' DuckDB runs on a worker, under its memory limit."""
        self.scheduler = scheduler or LOCAL
        self._cluster = None
        self._local_dir: str | None = None
        """The local cluster's workers' directory (paradise.scratch), removed on close."""
        self._own_client = client is None
        self._events: Any = None
        self._pending: list[str] = []
        """Statements for the event tables not run yet (execute): run when they start."""
        self._scratch: str | None = None
        self.capped_partitions = False
        """The exec graph's partitions as large as a task's memory allows (partitions.sizes uncapped):
        the cap measured for the embedded engine is not measured on workers, where it would double
        the buckets at 10^9 rows on 4 GiB workers (and the range x bucket files)."""
        self.client = client if client is not None else self._connect(scheduler, workers, worker_memory)

    def _connect(self, scheduler: str | None, workers: int, worker_memory: int | None) -> Any:
        try:
            import dask
            from dask.distributed import Client, LocalCluster
        except ImportError as exc:  # pragma: no cover - dask is a declared dependency
            raise EngineUnavailable(f"dask engine: dask.distributed is not installed ({exc})") from None
        if scheduler in (None, LOCAL):
            import logging

            from paradise.scratch import make_spill_dir

            # dask's temporary directory (the workers' directories, DuckDB's spill in them) is one of
            # paradise's own, removed on close, not its default $TMPDIR/dask-scratch-space, which stays
            self._local_dir = make_spill_dir()
            with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                                  "temporary-directory": self._local_dir}):
                self._cluster = LocalCluster(
                    n_workers=max(1, workers), threads_per_worker=1, processes=True, dashboard_address=None,
                    memory_limit=worker_memory if worker_memory else "auto", silence_logs=logging.ERROR,
                )
            return Client(self._cluster)
        return _client_within(Client, scheduler)

    @property
    def groups(self) -> list[list[str]]:
        """The trace's files in groups, one task each (group_files: at most FILES_PER_TASK files and
        step_memory() / TASK_ROW_BYTES rows), sized once the cluster's workers are known."""
        if self._groups is None:
            self._groups = group_files(self.trace, self.files_per_task, self.step_memory() // TASK_ROW_BYTES)
        return self._groups

    def _workers(self) -> int:
        try:
            return len(self.client.scheduler_info().get("workers", {}))
        except Exception:  # the scheduler went away: no worker either
            return 0

    def run_tasks(self, fn: Any, items: list[Any], **kwargs: Any) -> list[Any]:
        """fn(item, **kwargs) for every item as cluster tasks, results in order. A task whose worker
        died is retried (ALLOWED_FAILURES); after that, a cluster without workers for NO_WORKER_S or a
        lost scheduler, the run stops with one line (EngineUnavailable) instead of hanging."""
        import time

        from distributed import wait
        from distributed.scheduler import KilledWorker

        futures = self.client.map(fn, items, pure=False, **kwargs)
        idle_since: float | None = None
        try:
            while True:
                try:
                    wait(futures, timeout=POLL_S)
                    break
                except TimeoutError:
                    pass
                if self._workers():
                    idle_since = None
                elif idle_since is None:
                    idle_since = time.monotonic()
                elif time.monotonic() - idle_since > NO_WORKER_S:
                    raise no_worker_error(self.scheduler, NO_WORKER_S)
            return self.client.gather(futures)
        except KilledWorker as exc:
            raise EngineUnavailable(
                f"dask scheduler {self.scheduler}: a worker died running {getattr(fn, '__name__', fn)} on "
                f"{self.trace.path} ({exc.args[0] if exc.args else 'task'} killed {ALLOWED_FAILURES + 1} times; "
                "out of memory? raise --worker-memory)") from None
        except (OSError, TimeoutError) as exc:  # CommClosedError is an OSError
            raise EngineUnavailable(f"dask scheduler {self.scheduler}: lost ({_why(exc)})") from None
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def step_memory(self) -> int:
        """Bytes one event-layer step (a task) may use: TASK_DUCKDB_SHARE of the smallest worker's limit."""
        try:
            limits = [w.get("memory_limit") or 0 for w in self.client.scheduler_info().get("workers", {}).values()]
        except Exception:  # the scheduler went away: run_steps says so
            limits = []
        limit = min([x for x in limits if x] or [2 << 30])
        return int(limit * TASK_DUCKDB_SHARE)

    def scratch_dir(self, prefix: str) -> str:
        """A new directory for the event layer's partition files, on this machine's temporary
        directory (the workers of a LocalCluster see it; a remote cluster's workers must see the same
        path), removed on close."""
        import tempfile

        from paradise.scratch import make_spill_dir

        if self._scratch is None:
            self._scratch = make_spill_dir()
        return tempfile.mkdtemp(prefix=prefix, dir=self._scratch)

    def run_steps(self, fn: Any, items: list[dict[str, Any]], files: list[list[str]] | None = None,
                  step_bytes: int | None = None) -> list[Any]:
        """fn(connection, **item) for every item as cluster tasks (run_step), each over its own files
        (None: all the trace's), results in order; the cluster runs as many at once as its workers
        hold (`step_bytes` is for the embedded engine)."""
        every = [str(f) for f in self.trace.files]
        return self.run_tasks(run_step, [(item, files[i] if files is not None else every) for i, item in enumerate(items)],
                              step=fn, corrections=self.trace.corrections, same_columns=self.trace.same_columns)

    def execute(self, statement: str) -> None:
        """A statement of the event layer's own (a view over its partition files), for the event
        tables' DuckDB: kept until something reads them (the event layer's readers run as tasks,
        so an analysis may never start the event tables)."""
        if self._events is None:
            self._pending.append(statement)
        else:
            self._events.execute(statement)

    def query(self, name: str, **params: Any) -> pa.Table:
        """Runs the stage-1 query <name> per group of files and merges by its `-- merge:` rule."""
        rows = summarized(self.trace, self.trace.sql_files(), name, params)  # the files' footers, where they answer it
        if rows is not None:
            return rows
        text = load_sql(name)
        rule = parse_merge_rule(text, name)
        if rule.client:
            return self.sql(text, **params)
        partials = self.run_tasks(run_group, self.groups, text=text, params=dict(params),
                                  corrections=self.trace.corrections, label=name,
                                  same_columns=self.trace.same_columns)
        return merge_partials(list(partials), rule, name)

    def _event_tables(self) -> Any:
        """The event layer's DuckDB on a worker (paradise.engines.dask_events), started on first use."""
        if self._events is None:
            from paradise.engines.dask_events import RemoteEvents

            events = RemoteEvents(self.client, str(self.trace.path), self.scheduler, POLL_S, NO_WORKER_S)
            for statement in self._pending:
                events.execute(statement)
            self._events, self._pending = events, []
        return self._events

    def sql(self, text: str, **params: Any) -> pa.Table:
        """SQL that no merge rule splits (event-level queries, ad-hoc reads): run by the event tables'
        DuckDB on a worker, over all files; only the result comes back."""
        return self._event_tables().sql(text, **params)

    def batches(self, name: str, batch_rows: int = 1 << 20, **params: Any) -> pa.RecordBatchReader:
        """A `-- merge: client` query's result streamed, a batch at a time, from the event tables."""
        return self._event_tables().batches(name, batch_rows=batch_rows, **params)

    def materialize(self, table: str, name: str, *, append: bool = False, **params: Any) -> None:
        """An event-level table (`-- merge: client` queries): kept by the event tables' DuckDB."""
        self._event_tables().materialize(table, name, append=append, **params)

    def _write_step_cpu(self) -> None:
        """With STEP_CPU_ENV set: every worker's CPU seconds per task kind, as JSON, to that file."""
        import json
        import os

        path = os.environ.get(STEP_CPU_ENV)
        if not path or self.client is None:
            return
        try:
            per_worker = self.client.run(step_cpu)
        except Exception:  # the cluster is gone: nothing to say
            return
        with open(path, "w") as f:
            json.dump(per_worker, f)

    def close(self) -> None:
        try:
            self._write_step_cpu()
            if self._events is not None:
                self._events.close()
        finally:
            self._events, self._pending = None, []
            if self._scratch is not None:
                import shutil

                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None
            if self._own_client and self.client is not None:
                self.client.close()
            if self._cluster is not None:
                self._cluster.close()
                self._cluster = None
            if self._local_dir is not None:
                import shutil

                shutil.rmtree(self._local_dir, ignore_errors=True)
                self._local_dir = None

    def __enter__(self) -> DaskEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
