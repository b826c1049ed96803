"""The event layer's critical path and message cost fit (SQL over the exec graph table) against
plain numpy walks and fits over the whole graph (tests/oracles/exec_graph.py)."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.events import execgraph, graphread
from paradise.events.critpath import critical_path
from paradise.store import open_trace
from paradise.whatif.model import exec_graph
from tests.oracles import exec_graph as oracle
from tests.unit.graph_programs import PROGS, program_trace


@pytest.mark.parametrize("name", [*PROGS, "charm_like_parts"])
@pytest.mark.parametrize("buckets", [None, 3])
def test_hop_walk_is_the_full_walk(tmp_path, name, buckets):
    trace = program_trace(tmp_path, name)
    with DuckDBEngine(trace) as eng:
        info = execgraph.materialize(eng, buckets=buckets)
        cp = critical_path(eng, info)
        execgraph.view(eng, info)  # the whole graph's view (kept buckets written)
        g = exec_graph(eng.query("whatif_replay_graph"))
    want = oracle.critical_path(g)
    got = np.concatenate([np.arange(lo, hi + 1) for lo, hi in zip(cp.lo, cp.hi)])
    assert got.tolist() == want.tolist()
    assert cp.execs == len(want) and info.execs == g.n
    assert cp.length_ns == int(g.t1[want[-1]] - g.t0[want[0]])
    # hops between segments are messages; the path changes PE only there
    pes = g.pe[want]
    assert int((pes[1:] != pes[:-1]).sum()) <= cp.message_hops


@pytest.mark.parametrize("buckets", [None, 3])
@pytest.mark.parametrize("name", [*PROGS, "charm_like_parts"])
def test_latency_fit_in_sql_is_the_numpy_fit(tmp_path, name, buckets):
    # one bucket (the engine's table) or three (Parquet files, counts per value and moments merged)
    trace = program_trace(tmp_path, name)
    with DuckDBEngine(trace) as eng:
        info = execgraph.materialize(eng, buckets=buckets)
        assert len(info.parts) == (buckets if buckets else 0)
        got = execgraph.fit_latency(eng, info)
        execgraph.view(eng, info)  # the whole graph's view (kept buckets written)
        want = oracle.fit_latency(exec_graph(eng.query("whatif_replay_graph")))
    for field in ("a_ns", "ns_per_byte", "local_ns", "overhead_ns", "overhead_mean_ns"):
        assert math.isclose(getattr(got, field), getattr(want, field), rel_tol=1e-9, abs_tol=1e-6), field
    assert got.samples == want.samples


@pytest.mark.parametrize("name", ["ping_filler", "master_worker", "grid_periodic"])
def test_latency_fit_above_the_exact_quantile_limit_is_close(tmp_path, monkeypatch, name):
    # above EXACT_QUANTILE_MAX_EXECS the samples of a bucket with more than EXACT_VALUES_MAX distinct
    # values are rounded to ROUND_BITS significant bits (few distinct values to merge): each
    # quantile is the exact one's within a relative 2^-ROUND_BITS
    trace = program_trace(tmp_path, name)
    with DuckDBEngine(trace) as eng:
        info = execgraph.materialize(eng, buckets=2)
        exact = execgraph.latency_samples(eng, info)
        monkeypatch.setattr(execgraph, "EXACT_QUANTILE_MAX_EXECS", 0)
        monkeypatch.setattr(graphread, "ROUND_BITS", 3)  # coarse: these small delays do get rounded
        monkeypatch.setattr(graphread, "EXACT_VALUES_MAX", 0)  # in every bucket
        assert execgraph.latency_samples(eng, info) != exact
        monkeypatch.setattr(graphread, "EXACT_VALUES_MAX", 10**6)  # few distinct values: exact still
        assert execgraph.latency_samples(eng, info) == exact
        monkeypatch.setattr(graphread, "EXACT_VALUES_MAX", 0)
        approx = execgraph.latency_samples(eng, info)
        fitted = execgraph.fit_latency(eng, info)
    quantiles = ("any_cross_q10_ns", "cross_q90_ns", "local_median_ns", "kept_median_ns", "busy_gap_median_ns")
    assert any(exact[k] is not None for k in quantiles)
    assert any(exact[k] != approx[k] for k in quantiles)  # the rounding is in effect
    for k in quantiles:
        assert (exact[k] is None) == (approx[k] is None), k
        if exact[k] is not None:
            assert abs(approx[k] - exact[k]) <= 2 ** -3 * abs(exact[k]) + 1e-9, (k, exact[k], approx[k])
    for k in ("cross_n", "any_cross_n", "busy_gap_mean_ns"):  # not quantiles: the same either way
        assert exact[k] == approx[k], k
    assert fitted.samples == max(exact["cross_n"], exact["any_cross_n"])


def test_a_cycle_of_critical_predecessors_ends_the_path(tmp_path):
    # two execs each released by the other's message (clock skew): the walk stops, never loops
    from builders import TraceBuilder

    b = TraceBuilder(2, source="synthetic")
    b.exec(0, 1_000, 2_000, "a", msg=2)
    b.send(0, 1_300, 1, 8, msg=1)  # sent by a
    b.exec(1, 1_200, 3_000, "b", msg=1)
    b.send(1, 1_500, 0, 8, msg=2)  # sent by b
    trace = open_trace(b.write(tmp_path / "t"))
    with DuckDBEngine(trace) as eng:
        cp = Session(eng, trace).get("critical_path")
        g = exec_graph(eng.query("whatif_replay_graph"))
    got = [i for lo, hi in zip(cp.lo, cp.hi) for i in range(lo, hi + 1)]
    assert got == oracle.critical_path(g).tolist()
    assert sorted(got) == [0, 1]  # both execs, each once


def test_a_path_stopped_by_a_cycle_starts_where_its_first_exec_started(tmp_path):
    # a and b release each other (clock skew) after a first exec on each PE: the walk stops at a,
    # which is no PE's first exec, and the path's start is a's own
    from builders import TraceBuilder

    b = TraceBuilder(2, source="synthetic")
    b.exec(0, 0, 500, "z")
    b.exec(1, 0, 400, "y")
    b.exec(0, 1_000, 2_000, "a", msg=2)
    b.send(0, 1_300, 1, 8, msg=1)  # sent by a
    b.exec(1, 1_200, 3_000, "b", msg=1)
    b.send(1, 1_500, 0, 8, msg=2)  # sent by b
    trace = open_trace(b.write(tmp_path / "t"))
    with DuckDBEngine(trace) as eng:
        info = execgraph.materialize(eng, buckets=2)
        cp = critical_path(eng, info)
        execgraph.view(eng, info)  # the whole graph's view (kept buckets written)
        g = exec_graph(eng.query("whatif_replay_graph"))
    got = [i for lo, hi in zip(cp.lo, cp.hi) for i in range(lo, hi + 1)]
    assert got == oracle.critical_path(g).tolist()
    assert got[0] not in info.pe_first  # the start came from the graph's rows
    assert cp.t0_first == int(g.t0[got[0]]) == 1_000
    assert cp.length_ns == 3_000 - 1_000


@pytest.mark.parametrize("buckets", [None, 3])
@pytest.mark.parametrize("name", [*PROGS, "charm_like_parts"])
def test_path_entries_summed_in_ranges_equal_one_query_over_the_paths_rows(tmp_path, monkeypatch, name, buckets):
    # the oracle: events_critical_entries once over every bucket's path rows united; the engine
    # sums them in ranges of exec ids (here one per path exec or two: each range's first exec
    # reads the exec before it, which lies in the range before)
    from paradise.engines import load_sql
    from paradise.engines.merge import query_tables
    from paradise.events import critentries
    from paradise.events.critpath import path_entries

    trace = program_trace(tmp_path, name)
    with DuckDBEngine(trace) as eng:
        info = execgraph.materialize(eng, buckets=buckets)
        path = critical_path(eng, info)
        model = execgraph.fit_latency(eng, info)
        rows = graphread.united(eng, info.parts, "events_critical_rows", lo=path.lo, hi=path.hi)
        cost = {"a_ns": float(model.a_ns), "ns_per_byte": float(model.ns_per_byte), "local_ns": float(model.local_ns)}
        want = query_tables({"critical_rows": rows}, load_sql("events_critical_entries"), lo=path.lo, hi=path.hi,
                            id_lo=critentries.ID_MIN, id_hi=critentries.ID_MAX, **cost)
        got = {}
        for per_range in (None, 1, 2):
            if per_range:
                monkeypatch.setattr(critentries, "MIN_RANGE_EXECS", per_range)
                monkeypatch.setattr(critentries, "RANGE_ROW_BYTES", eng.step_memory() // per_range)
            got[per_range] = path_entries(eng, info, path, model)
    key = [("coll", "ascending"), ("entry", "ascending")]
    assert path.execs > 2 and len(critentries.cuts(path.lo, path.hi, path.execs)) == path.execs - 1
    for t in got.values():
        assert t.schema == want.schema and t.sort_by(key).to_pylist() == want.sort_by(key).to_pylist()


def test_whole_graph_readers_see_kept_buckets(tmp_path, monkeypatch):
    """The report's critical segments and the what-if replay read the whole graph's view: with the
    graph's buckets kept in memory (paradise.events.keptparts) they get the same rows as with the
    engine's one-bucket table."""
    from paradise.events import keptparts, partitions
    from paradise.report.html.gather import critical_segments
    from paradise.whatif import replay_graph

    trace = program_trace(tmp_path, "charm_like_parts")
    monkeypatch.setattr(keptparts, "allowance", lambda *_: 1 << 30)  # whatever this machine's memory

    def both(buckets: int) -> tuple[list, list, int]:
        real = partitions.sizes
        monkeypatch.setattr(partitions, "sizes", lambda execs, mem, capped=True: (real(execs, mem, capped)[0], buckets))
        with DuckDBEngine(trace) as eng:
            s = Session(eng, trace)
            info = s.get("exec_graph")
            kept = sum(isinstance(p, pa.Table) for p in info.parts)
            segs = critical_segments(s, -(2**62), 2**62)
            graph = replay_graph(s)
        return segs, [graph.pe.tolist(), graph.t0.tolist(), graph.src.tolist()], kept

    one, three = both(1), both(3)
    assert one[2] == 0 and three[2] == 3  # the engine's table; three kept buckets
    assert one[0] and three[0] == one[0] and three[1] == one[1]
