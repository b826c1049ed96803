"""paradise.store.connection: connections to shared DuckDB databases keep paradise's settings and
what each registers to itself; a cluster task's database is its thread's; a forked child opens its own."""

from __future__ import annotations

import multiprocessing
import threading

import pyarrow as pa

from paradise.store.connection import connect, database, thread_connection


def _settings(con) -> tuple:
    return con.execute("SELECT current_setting('asof_loop_join_threshold'), "
                       "current_setting('enable_progress_bar')").fetchone()


def test_every_connection_has_the_settings():
    for con in (database(), connect(), connect(threads=1), thread_connection()):
        try:
            assert _settings(con) == (0, False)
        finally:
            con.close()


def test_shared_connections_keep_their_registered_tables_apart():
    """Two threads register the same name at once over the one shared database: each reads its own."""
    barrier, seen = threading.Barrier(2), {}

    def run(k: int) -> None:
        con = connect()
        try:
            con.register("rows", pa.table({"v": [k] * (k + 1)}))
            barrier.wait()
            seen[k] = con.execute("SELECT sum(v) FROM rows").fetchone()[0]
        finally:
            con.close()

    threads = [threading.Thread(target=run, args=(k,)) for k in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {1: 1 * 2, 2: 2 * 3}  # k, k + 1 times


def test_shared_connections_are_one_database_per_thread_count():
    a, b, one = connect(), connect(), connect(threads=1)
    try:
        a.execute("SET threads = 3")  # a database setting: the other connection of that database sees it
        assert b.execute("SELECT current_setting('threads')").fetchone()[0] == 3
        assert one.execute("SELECT current_setting('threads')").fetchone()[0] == 1
    finally:
        a.execute("RESET threads")
        for con in (a, b, one):
            con.close()


def test_a_threads_database_is_its_own_and_lasts_for_its_next_task():
    first = thread_connection()
    first.execute("CREATE OR REPLACE VIEW events AS SELECT 7 AS v")
    first.close()
    again = thread_connection()
    try:
        assert again.execute("SELECT v FROM events").fetchone() == (7,)
    finally:
        again.close()
    other: list = []

    def look() -> None:
        con = thread_connection()
        try:
            other.append(con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = 'events'").fetchone()[0])
        finally:
            con.close()

    t = threading.Thread(target=look)
    t.start()
    t.join()
    assert other == [0]


def _child(out) -> None:
    con = connect()
    out.put(con.execute("SELECT 40 + 2").fetchone()[0])
    con.close()


def test_a_forked_child_queries_a_database_of_its_own():
    connect().close()  # the parent's shared database exists before the fork
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    p = ctx.Process(target=_child, args=(out,))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert out.get(timeout=5) == 42


def test_a_shared_database_that_stopped_working_is_replaced():
    """A fatal DuckDB error invalidates a database; a closed one stands in for it here."""
    from paradise.store import connection

    connect().close()
    connection._shared[None].close()
    con = connect()
    try:
        assert con.execute("SELECT 1").fetchone() == (1,)
    finally:
        con.close()


def test_a_threads_database_that_stopped_working_is_replaced():
    from paradise.store import connection

    thread_connection().close()
    connection._thread.db.close()
    con = thread_connection()
    try:
        assert con.execute("SELECT 1").fetchone() == (1,)
    finally:
        con.close()
