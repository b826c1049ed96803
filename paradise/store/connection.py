"""DuckDB connections with paradise's settings: a database of its own for an engine, and cheap
connections to a shared database for the small queries beside it (merges of partial results,
summaries, roll-ups) and for a cluster's tasks.

Opening a DuckDB database costs about 20 ms (its catalog of functions, its thread pool); a
connection to an open one costs under a millisecond. An engine's database has its own memory limit,
threads and spill directory, so each engine opens one; the queries beside it share one per process
(per thread for cluster tasks, which set their database's limits and views).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import duckdb

SETTINGS = ("SET enable_progress_bar = false", "SET asof_loop_join_threshold = 0")
"""Every connection's settings: no progress bar, and every ASOF join planned as one (DuckDB turns an
ASOF join whose left side it estimates under `asof_loop_join_threshold` rows into a nested loop, and
its estimates after window functions are 1 row: report_bins' innermost-interval join became a
quadratic loop). The second is a connection's own, so each connection gets both."""

_shared: dict[int | None, duckdb.DuckDBPyConnection] = {}
_lock = threading.Lock()
_thread = threading.local()
_forked_away: list[object] = []
"""The parent's databases after a fork, kept referenced: a child never closes them (their threads are
the parent's)."""


def _configured(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    for statement in SETTINGS:
        con.execute(statement)
    return con


def database() -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB database of its own, with paradise's settings: for an engine (or a query
    beside none) that sets the database's memory limit, threads and spill directory."""
    return _configured(duckdb.connect(":memory:"))


def cursor_of(base: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A new connection to `base`'s database with paradise's settings (a cursor starts from DuckDB's
    defaults for the connection's own ones, such as asof_loop_join_threshold). Close it when done."""
    return _configured(base.cursor())


def connect(threads: int | None = None) -> duckdb.DuckDBPyConnection:
    """A connection with paradise's settings to this process's shared in-memory DuckDB (with `threads`:
    the shared one that runs that many threads), for queries over registered Arrow tables or files.
    What it registers and its temporary tables are its own; it creates nothing in the database's
    catalog (other threads' connections share it). Close it when done."""
    with _lock:
        return _cursor(_shared.get(threads) or _open_shared(threads), lambda: _open_shared(threads))


def thread_connection() -> duckdb.DuckDBPyConnection:
    """A connection to this thread's own in-memory DuckDB, opened at the thread's first call: for a
    cluster task, which sets its database's memory limit, threads and views (a worker thread runs one
    task at a time, so the next task replaces them). Close it when done."""
    return _cursor(getattr(_thread, "db", None) or _open_thread(), _open_thread)


def _cursor(base: duckdb.DuckDBPyConnection, reopen: Callable[[], duckdb.DuckDBPyConnection]
            ) -> duckdb.DuckDBPyConnection:
    """A configured connection to `base`, or to reopen()'s new database where a fatal error (say, a
    damaged file's scan) invalidated `base`."""
    try:
        return _configured(base.cursor())
    except duckdb.Error:
        return _configured(reopen().cursor())


def _open_shared(threads: int | None) -> duckdb.DuckDBPyConnection:
    base = _shared[threads] = database()
    if threads:
        base.execute(f"SET threads = {int(threads)}")
    return base


def _open_thread() -> duckdb.DuckDBPyConnection:
    _thread.db = database()
    return _thread.db


def _after_fork_in_child() -> None:
    """A forked child opens databases of its own: the parent's are left alone."""
    global _lock, _thread
    _forked_away.extend(_shared.values())
    _forked_away.append(_thread)
    _shared.clear()
    _lock, _thread = threading.Lock(), threading.local()


os.register_at_fork(after_in_child=_after_fork_in_child)
