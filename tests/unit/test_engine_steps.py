"""The embedded engine's steps and cursors (paradise.engines.duckdb_engine): a step given some of the
trace's files reads only those, clock corrections applied as the engine's own `events` applies them;
every cursor, whichever thread asks, carries paradise's connection settings."""

from __future__ import annotations

import threading

import pyarrow.parquet as pq
import pytest

from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
from paradise.store.connection import SETTINGS
from tests.unit.test_clock_offsets import SQL, skewed  # noqa: F401  (the fixture: PE 1's clock skewed)


def _rows(con) -> list[dict]:
    return con.sql(SQL).to_arrow_table().to_pylist()


@pytest.mark.parametrize("side_by_side", [False, True])
def test_a_step_given_some_files_reads_only_those_corrected(skewed, side_by_side):  # noqa: F811
    trace = open_trace(skewed)
    files = [str(f) for f in trace.files]
    with DuckDBEngine(trace) as eng:
        whole = eng.sql(SQL).to_pylist()
        step_bytes = 1 if side_by_side else None  # 1 byte a step: as many at once as there are threads
        got = eng.run_steps(_rows, [{}, {}, {}, {}], files=[[files[1]], [files[0]], [], files],
                            step_bytes=step_bytes)
        after = eng.sql(SQL).to_pylist()  # the steps' views were their cursors' own
    by_pe = {pe: [r for r in whole if r["pe"] == pe] for pe in (0, 1)}
    assert len(by_pe[0]) == len(by_pe[1]) == 3
    assert by_pe[1][0]["t0"] != 1_000_000  # PE 1's times corrected in the whole view
    assert got == [by_pe[1], by_pe[0], whole, whole]
    assert after == whole


def test_cursors_of_other_threads_carry_the_connection_settings(skewed):  # noqa: F811
    names = [s.split()[1] for s in SETTINGS]
    query = "SELECT " + ", ".join(f"current_setting('{n}')::VARCHAR AS \"{n}\"" for n in names)
    seen: dict[str, dict] = {}
    trace = open_trace(skewed)
    with DuckDBEngine(trace) as eng:
        seen["owner"] = eng.sql(query).to_pylist()[0]
        worker = threading.Thread(target=lambda: seen.__setitem__("other", eng.sql(query).to_pylist()[0]))
        worker.start()
        worker.join()
        seen["step"] = eng.run_steps(lambda con: con.sql(query).to_arrow_table().to_pylist()[0], [{}, {}],
                                     files=[[str(trace.files[0])], []], step_bytes=1)[0]
    want = {n: s.split("=", 1)[1].strip() for n, s in zip(names, SETTINGS)}
    assert {k: {n: v.lower() for n, v in row.items()} for k, row in seen.items()} == {
        k: want for k in ("owner", "other", "step")}


def test_files_of_one_schema_are_read_as_they_are_and_others_united(tmp_path, skewed):  # noqa: F811
    """A trace whose files agree on their columns (the format's added ones among them) is read without
    uniting the schemas by name, corrections still applied; a file of an older minor (no exec_t0)
    makes the engine unite them, its added column null."""
    trace = open_trace(skewed)
    assert trace.same_columns
    with DuckDBEngine(trace) as eng:
        sql = eng.sql("SELECT sql FROM duckdb_views() WHERE view_name = 'events'").column("sql")[0].as_py()
        rows = eng.sql(SQL).to_pylist()
    assert "union_by_name" not in sql and [r["pe"] for r in rows] == [0, 0, 0, 1, 1, 1]
    assert rows[3]["t0"] != rows[0]["t0"]  # PE 1's clock corrected
    older = tmp_path / "older"
    older.mkdir()
    for pe in (0, 1):
        table = pq.read_table(skewed / f"pe-{pe:05d}.parquet")
        if pe == 1:  # as a writer of format 1.0 left it: no exec_t0 column
            table = table.drop_columns(["exec_t0"]).replace_schema_metadata(table.schema.metadata)
        pq.write_table(table, older / f"pe-{pe:05d}.parquet")
    trace = open_trace(older)
    assert not trace.same_columns
    with DuckDBEngine(trace) as eng:
        rows = eng.sql(SQL).to_pylist()
    assert [r["exec_t0"] is None for r in rows] == [False] * 3 + [True] * 3
