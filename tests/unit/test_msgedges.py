"""communication_edges from the shared event arrays equals the SQL query, row for row."""

from __future__ import annotations

import pytest
from builders import charm_like

from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.events import msgedges
from paradise.store import open_trace
from tests.unit import charm_synth as cs

PROGS = {"grid": cs.grid2d(4, 4, 2, 3, periodic=True), "master_worker": cs.master_worker(5, 2, 12),
         "pipeline": cs.pipeline(4, 2, 3), "histsort": cs.histsort(6, 2), "tree": cs.binary_tree(3, 2),
         "all_to_all": cs.all_to_all(4, 2, rounds=2), "ping_filler": cs.ping_filler(10, 20),
         "scatter_reduce": cs.scatter_reduce(6, 2)}


def _rows(table) -> list[tuple]:
    cols = msgedges.SCHEMA.names
    return sorted((tuple(r[c] for c in cols) for r in table.to_pylist()), key=repr)


def _check(trace) -> None:
    with DuckDBEngine(trace) as eng:
        sql = eng.query("communication_edges")
        lean = msgedges.communication_edges(eng)
    assert lean.schema == sql.select(msgedges.SCHEMA.names).schema
    assert _rows(lean) == _rows(sql)
    order = list(msgedges.ORDER)  # same sort on the ordering columns
    assert lean.select(order).to_pylist() == sql.select(order).to_pylist()


@pytest.mark.parametrize("name", list(PROGS))
def test_edges_match_sql_on_charm_programs(tmp_path, name):
    prog, pl = PROGS[name]
    _check(open_trace(prog.write(tmp_path / "t", pl)))


def test_edges_match_sql_with_parts_and_unmatched_sends(tmp_path):
    _check(open_trace(charm_like(pes=3, steps=3).write(tmp_path / "c", parts_per_pe=2)))


def test_edges_match_sql_on_broadcasts_resends_and_unknowns(tmp_path):
    # a broadcast (one msg, three execs), a message sent twice (the earliest send counts, bytes
    # the largest), sends without bytes, without a receiving exec, and without a peer PE
    from builders import TraceBuilder

    b = TraceBuilder(3)
    obj = {"coll": "A#0", "cat": "array"}
    b.exec(0, 0, 100, "A.go", obj=0, index="[0]", **obj)
    m = b.send(0, 10, 1, 32, name="A.bcast", obj=0, index="[0]", **obj)
    for pe in (0, 1, 2):
        b.exec(pe, 200 + pe, 260 + pe, "A.bcast", msg=m, obj=pe, index=f"[{pe}]", **obj)
    r = b.send(1, 300, 2, 16, name="A.re", obj=1, index="[1]", **obj)
    b.send(1, 290, 2, 48, name="A.re", msg=r, obj=1, index="[1]", **obj)
    b.exec(2, 400, 450, "A.re", msg=r, obj=2, index="[2]", **obj)
    b.add(2, "send", 460, 460, msg=b.next_msg(), name="A.lost", peer_pe=0, peer_coll="A#0", peer_obj=0, **obj)
    b.add(0, "send", 470, 470, msg=b.next_msg(), name="A.void", bytes=8)
    b.exec(1, 500, 520, "A.late", msg=b.send(0, 480, 1, 8, name="A.late"))
    _check(open_trace(b.write(tmp_path / "b")))


@pytest.mark.parametrize("name", list(PROGS))
def test_reduction_precheck_never_skips_a_reduction(tmp_path, name):
    from paradise.events import execarrays

    prog, pl = PROGS[name]
    with DuckDBEngine(open_trace(prog.write(tmp_path / "t", pl))) as eng:
        found = eng.query("communication_reductions").num_rows
        assert execarrays.reduction_targets(eng) or found == 0
