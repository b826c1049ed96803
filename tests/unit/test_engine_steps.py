"""The embedded engine's steps and cursors (paradise.engines.duckdb_engine): a step given some of the
trace's files reads only those, clock corrections applied as the engine's own `events` applies them;
every cursor, whichever thread asks, carries paradise's connection settings."""

from __future__ import annotations

import threading

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
