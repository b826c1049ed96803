"""Placement characteristics and the mapping hint on synthetic runs of known structure."""

from __future__ import annotations

import random

import pytest

from hints.format import load_hint, write_hint
from hints.generators import mapping as mapping_gen
from paradise.analyses import overview, placement
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
from tests.unit import charm_synth as cs

HEAVY = {(0, 0), (0, 1), (1, 0), (1, 1)}


def heavy_cost(i, j, s):
    return 800_000 if (i, j) in HEAVY else 100_000


def run(tmp_path, prog_placement, name="t"):
    prog, pl = prog_placement
    trace = open_trace(prog.write(tmp_path / name, pl))
    with DuckDBEngine(trace) as eng:
        return trace, placement.analyze(Session(eng, trace))


def char(result, name):
    return next(c for c in result.characteristics if c.name == name)


def imbalance_of(trace):
    """The run's one load_imbalance (the overview's; placement reads it for its hint)."""
    with DuckDBEngine(trace) as eng:
        return overview.load_imbalance(Session(eng, trace).get("pe_time"))


def test_imbalance_names_the_heavy_objects(tmp_path):
    # 4x4 cells in row blocks on 2 PEs: the 4 heavy cells (8x work) all sit on PE 0
    trace, r = run(tmp_path, cs.grid2d(4, 4, 2, 4, cost=heavy_cost))
    assert not [c for c in r.characteristics if c.name == "load_imbalance"]  # one result: the overview's
    imb = imbalance_of(trace)
    # PE 0: 4*800 + 4*100 = 3600 per step, PE 1: 800 -> max/mean = 3600 / 2200
    assert imb.value == pytest.approx(3600 / 2200, rel=0.02)
    assert {e.metric: e.value for e in imb.evidence}["max_pe"] == 0
    dist = char(r, "object_load_distribution")
    heavy = {e.metric: e.value for e in dist.evidence}["heavy_objects"]
    assert set(heavy) == {f"Cell#0[{i},{j}]" for i, j in HEAVY}


def test_mapping_hint_improves_and_places_each_object_once(tmp_path):
    trace, r = run(tmp_path, cs.grid2d(4, 4, 2, 4, cost=heavy_cost))
    (doc,) = r.hints
    assert doc["kind"] == "mapping" and doc["strategy"] != "keep"
    cells = doc["collections"]["Cell#0"]
    assert sorted(cells) == sorted(f"[{i},{j}]" for i in range(4) for j in range(4))
    assert set(cells.values()) <= {0, 1}
    gain = doc["predicted_gain"]
    assert gain["makespan_ns_after"] < gain["makespan_ns_before"]
    assert doc["justified_by"][0]["characteristic"] in ("load_imbalance", "communication_locality")
    assert doc["provenance"]["trace_fingerprint"] == trace.fingerprint
    back = load_hint(write_hint(tmp_path / "h", doc), "mapping", program=trace.program, pes=2)
    assert back["collections"] == doc["collections"]
    assert "mapping.json" in r.sections["hint_explanations"][0]


def test_predicted_gain_matches_a_rerun(tmp_path):
    """Running the synthetic program again under the proposed mapping takes what the replay said."""
    prog, pl = cs.grid2d(4, 4, 2, 4, cost=heavy_cost)
    trace, r = run(tmp_path, (prog, pl))
    (doc,) = r.hints
    new = {("Cell#0", tuple(int(x) for x in k.strip("[]").split(","))): p
           for k, p in doc["collections"]["Cell#0"].items()}
    rerun = open_trace(prog.write(tmp_path / "rerun", new))
    with DuckDBEngine(rerun) as eng:
        measured = eng.sql("SELECT max(t1) - min(t0) AS m FROM events WHERE kind = 'exec'").column("m")[0].as_py()
    assert doc["predicted_gain"]["makespan_ns_after"] == pytest.approx(measured, rel=0.05)


def test_balanced_run_keeps_the_mapping(tmp_path):
    trace, r = run(tmp_path, cs.grid2d(4, 4, 2, 3))
    (doc,) = r.hints
    assert doc["strategy"] == "keep"
    assert doc["collections"]["Cell#0"]["[0,0]"] == 0 and doc["collections"]["Cell#0"]["[3,3]"] == 1
    assert imbalance_of(trace).value == pytest.approx(1.0, abs=0.05)
    assert char(r, "object_creation").value == "static"


def test_hint_never_worse_than_current(tmp_path):
    rng = random.Random(7)
    for k in range(3):
        loads = {(i, j): rng.choice([50_000, 100_000, 400_000]) for i in range(4) for j in range(3)}
        _, r = run(tmp_path, cs.grid2d(4, 3, 3, 3, cost=lambda i, j, s, t=loads: t[(i, j)]), name=f"r{k}")
        cands = {c["strategy"]: c for c in r.sections["mapping_candidates"]}
        chosen = r.hints[0]["strategy"]
        assert "keep" in cands and chosen in cands and len(cands) > 1  # the current mapping is always a candidate
        assert cands[chosen]["replay_makespan_ns"] <= cands["keep"]["replay_makespan_ns"]


def test_persistence(tmp_path):
    _, r = run(tmp_path, cs.grid2d(3, 3, 2, 5, cost=heavy_cost))
    assert {e.metric: e.value for e in char(r, "load_persistence").evidence}["persistent"] is True
    rng = random.Random(3)
    table = {(i, j, s): rng.choice([10_000, 900_000]) for i in range(3) for j in range(3) for s in range(5)}
    _, r2 = run(tmp_path, cs.grid2d(3, 3, 2, 5, cost=lambda i, j, s: table[(i, j, s)]), name="rand")
    assert {e.metric: e.value for e in char(r2, "load_persistence").evidence}["persistent"] is False


def test_locality(tmp_path):
    _, r = run(tmp_path, cs.grid2d(4, 4, 1, 2))
    assert char(r, "communication_locality").value == 0.0  # one PE: nothing crosses
    _, r2 = run(tmp_path, cs.grid2d(4, 4, 2, 2), name="two")
    ev = {e.metric: e.value for e in char(r2, "communication_locality").evidence}
    # row blocks on 2 PEs: the 4 vertical edges between rows 1 and 2 are cut (both directions: 8 of 48)
    assert ev["edge_cut"] == 8 and ev["object_edges"] == 48


def test_generators():
    loads = {"a": 10.0, "b": 8.0, "c": 5.0, "d": 5.0, "e": 2.0}
    lpt = mapping_gen.greedy_lpt(loads, 2)
    assert sorted(mapping_gen.pe_loads(lpt, loads, 2)) == [15.0, 15.0]
    current = dict.fromkeys(loads, 0)
    ref = mapping_gen.refine(current, loads, 2, max_moves=2)
    assert mapping_gen.moves(current, ref) <= 2
    assert max(mapping_gen.pe_loads(ref, loads, 2)) < 30.0
    edges = [("a", "b", 100.0), ("c", "d", 100.0), ("b", "c", 1.0)]
    part = mapping_gen.metis_partition(loads, edges, 2, current)
    assert set(part) == set(loads) and set(part.values()) <= {0, 1}
    assert mapping_gen.to_payload({("C#0", "[1]"): 1, ("C#0", "[0]"): 0}) == {"C#0": {"[0]": 0, "[1]": 1}}


def test_empty_trace_gives_no_hint(tmp_path):
    from tests.trace_writer import TraceWriter

    with TraceWriter(tmp_path / "e", 0, source="synthetic", program="e", pes=1):
        pass
    trace = open_trace(tmp_path / "e")
    with DuckDBEngine(trace) as eng:
        r = placement.analyze(Session(eng, trace))
    assert r.hints == [] and r.characteristics == []


def test_mapping_hint_states_cross_pe_bytes(tmp_path):
    # cross-PE bytes before and after, computed here from the trace's send and exec rows and the
    # mapping's placement of each object
    import duckdb

    trace, r = run(tmp_path, cs.grid2d(4, 4, 2, 4, cost=heavy_cost))
    (doc,) = r.hints
    con = duckdb.connect()
    rows = con.sql(
        f"""SELECT s.pe AS src_pe, x.pe AS dst_pe, s.coll AS sc, s.index AS si, x.coll AS dc, x.index AS di,
                   coalesce(s.bytes, x.bytes) AS bytes
            FROM read_parquet('{trace.path}/*.parquet', union_by_name=true) s
            JOIN read_parquet('{trace.path}/*.parquet', union_by_name=true) x ON s.msg = x.msg
            WHERE s.kind = 'send' AND x.kind = 'exec'""").fetchall()
    cells = doc["collections"]["Cell#0"]
    before = sum(b or 0 for sp, dp, *_, b in rows if sp != dp)

    def where(coll, index, pe):
        return cells.get(index, pe) if coll == "Cell#0" else pe

    after = sum(b or 0 for sp, dp, sc, si, dc, di, b in rows if where(sc, si, sp) != where(dc, di, dp))
    gain = doc["predicted_gain"]
    assert (gain["cross_pe_bytes_before"], gain["cross_pe_bytes_after"]) == (before, after)
    assert before > 0 and after != before
    assert f"cross-PE bytes x{after / before:.2g} ({before:,} B -> {after:,} B)" in r.sections["hint_explanations"][0]
