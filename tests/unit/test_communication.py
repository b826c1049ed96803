"""Communication patterns on synthetic programs of known structure, sizes, the comm hint."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from builders import TraceBuilder, charm_like, torch_like

from hints.format import load_hint, write_hint
from hints.generators import comm as comm_gen
from paradise.analyses import communication
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.events import objgraph
from paradise.store import open_trace
from tests.unit import charm_synth as cs


def analyze(tmp_path, prog_placement, name="t"):
    prog, placement = prog_placement
    trace = open_trace(prog.write(tmp_path / name, placement))
    with DuckDBEngine(trace) as eng:
        return trace, communication.analyze(Session(eng, trace))


def phases(result, coll):
    return {p["phase"]: p["pattern"] for p in result.sections["patterns"][coll]}


def phase(result, coll, name):
    return next(p for p in result.sections["patterns"][coll] if p["phase"] == name)


def test_grid_2d_non_periodic(tmp_path):
    _, r = analyze(tmp_path, cs.grid2d(4, 5, 2, 3))
    assert phases(r, "Cell#0") == {"recv": "grid", "start": "star"}  # main starts every cell
    p = phase(r, "Cell#0", "recv")
    # 4x5 lattice: 2*(3*5 + 4*4) = 62 directed neighbour edges, all at Manhattan distance 1
    assert p["evidence"]["edges"] == 62
    assert p["evidence"]["near_share"] == 1.0 and p["evidence"]["periodic"] is False
    assert p["evidence"]["extents"] == [4, 5]


def test_grid_2d_periodic(tmp_path):
    _, r = analyze(tmp_path, cs.grid2d(4, 4, 2, 2, periodic=True))
    p = phase(r, "Cell#0", "recv")
    assert p["pattern"] == "grid" and p["evidence"]["periodic"] is True
    assert p["evidence"]["degree_match"] == 1.0  # a torus: every cell has its 4 neighbours


def test_master_worker_is_star(tmp_path):
    _, r = analyze(tmp_path, cs.master_worker(6, 2, 30))
    assert phases(r, "Worker#0") == {"work": "star"}
    assert phases(r, "Master#0") == {"result": "star"}  # replies to a master that dispatched work
    hub = r.sections["patterns"]["Worker#0"][0]["evidence"]["hub"]
    assert hub == ["Master#0", "[0]"]


def test_pipeline_is_chain(tmp_path):
    _, r = analyze(tmp_path, cs.pipeline(6, 2, 4))
    assert phases(r, "Stage#0") == {"item": "chain"}


def test_complete_graph_is_all_to_all(tmp_path):
    _, r = analyze(tmp_path, cs.all_to_all(5, 2))
    (p,) = r.sections["patterns"]["Peer#0"]
    assert p["pattern"] == "all-to-all" and p["evidence"]["density"] == 1.0  # 5*4 of 5*4 edges


def test_spanning_tree_is_tree(tmp_path):
    _, r = analyze(tmp_path, cs.binary_tree(4, 2))
    (p,) = r.sections["patterns"]["Node#0"]
    assert p["pattern"] == "tree"


def test_histsort_phases_differ(tmp_path):
    _, r = analyze(tmp_path, cs.histsort(6, 2))
    assert phases(r, "Bucket#0") == {"histogram": "tree", "exchange": "all-to-all"}  # broadcast, exchange
    assert phases(r, "(pe)") == {"reduced": "tree"}  # buckets reduce to main
    char = next(c for c in r.characteristics if c.name == "pattern:Bucket#0")
    assert set(char.value) == {"tree", "all-to-all"}


def test_reduction_without_messages_is_inferred_as_tree(tmp_path):
    _, r = analyze(tmp_path, cs.scatter_reduce(6, 2, rounds=3))
    assert phases(r, "Elem#0") == {"work": "star"}  # the coordinator hands out work point to point
    assert phases(r, "Coord#0") == {"done": "tree"}  # contribute() -> done: a reduction
    done = phase(r, "Coord#0", "done")
    assert done["evidence"]["inferred_reduction"] is True and done["evidence"]["edges"] == 6


def test_irregular():
    edges = pd.DataFrame({
        "src_coll": ["A#0"] * 5, "src_index": ["[0]", "[1]", "[2]", "[5]", "[3]"], "src_pe": [0] * 5,
        "dst_coll": ["A#0"] * 5, "dst_index": ["[4]", "[3]", "[0]", "[1]", "[5]"], "dst_pe": [1] * 5,
        "src_obj": [0] * 5, "dst_obj": [0] * 5, "entry": ["x"] * 5, "msgs": [1] * 5, "bytes": [10] * 5,
        "min_bytes": [10] * 5, "max_bytes": [10] * 5, "bcast_msgs": [0] * 5, "steps": [1] * 5})
    pats = objgraph.collection_patterns(edges)
    assert pats["A#0"][0]["pattern"] == "irregular"


def test_sizes_and_small_message_hint(tmp_path):
    trace, r = analyze(tmp_path, cs.all_to_all(4, 2, nbytes=100, rounds=40))
    sizes = next(c for c in r.characteristics if c.name == "message_sizes")
    assert sizes.value == 100  # every message is 100 bytes: bucket [64, 128), capped at the largest
    small = next(c for c in r.characteristics if c.name == "many_small_messages")
    # peers 0,2 on PE 0 and 1,3 on PE 1: each PE pair carries 2*2*40 = 160 messages of 100 bytes
    assert small.value == 2
    (doc,) = r.hints
    assert {(c["src_pe"], c["dst_pe"], c["msgs"]) for c in doc["combine"]} == {(0, 1, 160), (1, 0, 160)}
    # 32 KiB of 100-byte messages per batch: 327, so each stream's 160 messages leave in one batch
    assert {c["batch"] for c in doc["combine"]} == {32 * 1024 // 100} and doc["predicted_gain"]["msgs_after"] == 2
    assert doc["justified_by"][0]["characteristic"] == "many_small_messages"
    path = write_hint(tmp_path / "hints", doc)
    back = load_hint(path, "comm", program=trace.program, pes=2)
    assert back["combine"] == doc["combine"]
    assert "comm.json" in r.sections["hint_explanations"][0]


def test_no_hint_without_small_streams(tmp_path):
    _, r = analyze(tmp_path, cs.grid2d(3, 3, 2, 2))
    assert r.hints == []


def test_combine_candidates_threshold():
    streams = [{"src_pe": 0, "dst_pe": 1, "entry": "a", "msgs": 100, "bytes": 1000, "max_bytes": 10},
               {"src_pe": 0, "dst_pe": 1, "entry": "b", "msgs": 100, "bytes": 10**6, "max_bytes": 10**4},
               {"src_pe": 1, "dst_pe": 1, "entry": "a", "msgs": 1000, "bytes": 1000, "max_bytes": 1},
               {"src_pe": 1, "dst_pe": 0, "entry": "a", "msgs": 10, "bytes": 10, "max_bytes": 1}]
    (c,) = comm_gen.combine_candidates(streams)
    assert (c["entry"], c["msgs"], c["batch"]) == ("a", 100, comm_gen.BATCH_MAX)  # 32 KiB / 10 B, capped


def test_same_pe_streams_on_request():
    """A charm4py run's same-PE streams are proposed too (same_pe): the busiest stream first."""
    streams = [{"src_pe": 0, "dst_pe": 1, "entry": "a", "msgs": 100, "bytes": 1000, "max_bytes": 10},
               {"src_pe": 1, "dst_pe": 1, "entry": "a", "msgs": 1000, "bytes": 1000, "max_bytes": 1},
               {"src_pe": 1, "dst_pe": 1, "entry": "b", "msgs": 10, "bytes": 10, "max_bytes": 1}]
    got = comm_gen.combine_candidates(streams, same_pe=True)
    assert [(c["src_pe"], c["dst_pe"], c["msgs"]) for c in got] == [(1, 1, 1000), (0, 1, 100)]
    # the per-message saving: 1000 - 1 local messages at 2 ns, 100 - 1 cross-PE ones at 7 ns
    assert comm_gen.saving_ns(got, 7.0, 2.0) == 999 * 2.0 + 99 * 7.0


@pytest.mark.parametrize(("max_bytes", "batch"), [(88, 372), (4096, 8), (10**4, 8), (1, 1024), (0, 8), (None, 8)])
def test_batch_holds_32_kib_of_the_streams_largest_messages(max_bytes, batch):
    assert comm_gen.batch_for(max_bytes) == batch


def test_schema_documents_payload():
    sch = json.loads(open("hints/schemas/comm-1.json").read())
    assert {"combine", "threshold"} <= set(sch["required"])


@pytest.mark.parametrize("text,expected", [("[3,4]", (3, 4)), ("[7]", (7,)), (None, None)])
def test_parse_index(text, expected):
    assert objgraph.parse_index(text) == expected


def _odd_sends(path):
    """Sends with null bytes, zero bytes, no peer (a broadcast) and a row of another kind."""
    b = TraceBuilder(2, source="synthetic")
    for i, (nbytes, peer) in enumerate([(None, 1), (0, 1), (1, 1), (3, None), (4096, 0), (None, None)]):
        b.add(i % 2, "send", 10 * i, None, peer_pe=peer, bytes=nbytes, name="A.go", msg=i + 1)
    b.exec(1, 100, 110, "A.go", coll="A#0", index=(0,), cat="array")
    return b.write(path)


@pytest.mark.parametrize("make", ["charm_like", "torch_like", "odd_sends", "histsort"])
def test_size_histogram_equals_communication_sizes(tmp_path, make):
    # tests/oracles/sql/communication_sizes.sql is the definition; communication rolls it up from
    # the overview's group table
    from pathlib import Path

    sql = (Path(__file__).resolve().parents[1] / "oracles" / "sql" / "communication_sizes.sql").read_text()
    if make == "histsort":
        prog, pl = cs.histsort(6, 2)
        path = prog.write(tmp_path / "t", pl)
    elif make == "odd_sends":
        path = _odd_sends(tmp_path / "t")
    else:
        path = (charm_like(pes=3, steps=3) if make == "charm_like" else torch_like(ranks=2, steps=2)).write(tmp_path / "t")
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        expect = eng.sql(sql)
        got = communication.size_histogram(eng.query("overview_pe"))
    assert got.schema == expect.schema and got.to_pylist() == expect.to_pylist()
    assert make == "torch_like" or len(got) > 0


def _varied_sizes_trace(tmp_path):
    """3 PEs, 300 messages of varied sizes (halo-like 4,174 B mostly), so that bucket edges and
    exact quantiles differ; returns the trace and the raw sizes."""
    import random

    rng = random.Random(5)
    b = TraceBuilder(3, program="sizes")
    sizes = []
    for i in range(300):
        n = 4174 if i % 3 else rng.randrange(50, 20_000)
        src, dst = i % 3, (i + 1) % 3
        b.message(src, i * 1_000, dst, i * 1_000 + 500, i * 1_000 + 800, "Cell.halo", n,
                  src=("Cell#0", src), dst=("Cell#0", dst))
        sizes.append(n)
    return open_trace(b.write(tmp_path / "sizes", parts_per_pe=2, complete=True)), sizes


def test_message_size_quantiles_are_exact(tmp_path):
    import numpy as np

    trace, raw = _varied_sizes_trace(tmp_path)
    with DuckDBEngine(trace) as eng:
        r = communication.analyze(Session(eng, trace))
    c = next(c for c in r.characteristics if c.name == "message_sizes")
    ev = {e.metric: e.value for e in c.evidence}
    ordered = np.sort(raw)
    for q in (0.5, 0.9, 0.99):  # quantile_disc: the ceil(q*n)-th smallest size (a size sent)
        want = int(ordered[max(0, int(np.ceil(q * len(raw))) - 1)])
        assert ev[f"p{int(q * 100)}_bytes"] == want and want in raw
    assert c.value == 4174  # the halo size itself, not its bucket's edge 8191
    assert ev["small_share"] == round(sum(n <= comm_gen.COMBINE_MAX_BYTES for n in raw) / len(raw), 4)
    assert "Median message 4,174 B" in c.summary and "exact" in c.summary


def test_message_size_quantiles_on_dask_match(tmp_path):
    from paradise.engines import get_engine

    trace, _ = _varied_sizes_trace(tmp_path)
    with get_engine(trace, "dask") as eng, DuckDBEngine(trace) as duck:
        kw = {"small_bytes": comm_gen.COMBINE_MAX_BYTES}
        assert eng.query("communication_size_quantiles", **kw) == duck.query("communication_size_quantiles", **kw)
