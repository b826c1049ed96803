"""Engines: merge rules, DuckDB vs Dask agreement on every overview query, file grouping, errors."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from builders import TraceBuilder, charm_like, torch_like
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paradise.engines import dask_engine as de
from paradise.engines import get_engine
from paradise.engines.busy import pe_time
from paradise.engines.dask_engine import DaskEngine, group_files
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.engines.merge import MergeRuleError, merge_partials, parse_merge_rule
from paradise.errors import EngineUnavailable
from paradise.store import open_trace

OVERVIEW_QUERIES = ("overview_pe",)


@pytest.fixture(scope="module")
def dask_client():
    """One in-process LocalCluster for the module (starting one per example would dominate)."""
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    client = Client(cluster)
    yield client
    client.close()
    cluster.close()


def _sorted(table: pa.Table, name: str) -> list[dict]:
    from paradise.engines import load_sql

    keys = parse_merge_rule(load_sql(name), name).key_columns(table.column_names)
    rows = table.to_pylist()
    return sorted(rows, key=lambda r: tuple((r[k] is not None, r[k]) for k in keys))


def _assert_engines_agree(path: Path, client, files_per_task: int) -> None:
    trace = open_trace(path)
    with DuckDBEngine(trace) as duck, DaskEngine(trace, client=client, files_per_task=files_per_task) as dask:
        for name in OVERVIEW_QUERIES:
            a, b = duck.query(name), dask.query(name)
            assert a.schema == b.schema, name
            assert _sorted(a, name) == _sorted(b, name), name
        assert pe_time(duck) == pe_time(dask)  # the time accounting, swept over each engine's stream


# -- merge rules --------------------------------------------------------------------------------
def test_merge_rule_forms():
    r = parse_merge_rule("-- merge: keys(pe, peer_pe) sum(messages, bytes) min(t0) max(t1) any(x)\nSELECT 1")
    assert r.keys == ("pe", "peer_pe") and r.columns == {
        "messages": "sum", "bytes": "sum", "t0": "min", "t1": "max", "x": "any"}
    r = parse_merge_rule("-- merge: group by pe, step; sum(busy_ns), min(t_min).\nSELECT 1")
    assert r.keys == ("pe", "step") and r.columns == {"busy_ns": "sum", "t_min": "min"}
    r = parse_merge_rule("-- merge: group by the key columns; sum(n),\n--        max(m).\nSELECT 1")
    assert r.keys is None and r.key_columns(["a", "n", "b", "m"]) == ["a", "b"]
    for text in ("-- merge: client", "-- merge: none (event level)", "-- merge: sum(n); needs all files at once"):
        assert parse_merge_rule(text).client


@pytest.mark.parametrize(
    "text, problem",
    [
        ("SELECT 1", "found 0"),
        ("-- merge: sum(a)\n-- merge: sum(b)", "found 2"),
        ("-- merge: keys(pe) sum(a) max(a)", "appears twice"),
        ("-- merge: keys(pe) sum(a + b)", "not a column name"),
        ("-- merge: whatever", "names no merge function"),
    ],
)
def test_merge_rule_errors(text, problem):
    with pytest.raises(MergeRuleError, match=problem):
        parse_merge_rule(text, "q")


def test_merge_partials_sums_mins_maxes_and_keeps_types():
    rule = parse_merge_rule("-- merge: keys(pe, name) sum(n) min(lo) max(hi)")
    schema = pa.schema([("pe", pa.int32()), ("name", pa.string()), ("n", pa.int64()), ("lo", pa.int64()),
                        ("hi", pa.int64())])
    p1 = pa.table({"pe": [0, 1], "name": ["a", None], "n": [2, 3], "lo": [5, 1], "hi": [9, 2]}, schema=schema)
    p2 = pa.table({"pe": [0, 1], "name": ["a", None], "n": [1, 4], "lo": [3, 0], "hi": [7, 8]}, schema=schema)
    out = merge_partials([p1, p2], rule)
    assert out.schema == schema
    assert out.to_pylist() == [
        {"pe": 0, "name": "a", "n": 3, "lo": 3, "hi": 9},
        {"pe": 1, "name": None, "n": 7, "lo": 0, "hi": 8},  # a null key is one group, as in SQL
    ]


def test_merge_partials_refuses_unnamed_columns():
    rule = parse_merge_rule("-- merge: keys(pe) sum(n)")
    with pytest.raises(MergeRuleError, match="does not say how to merge extra"):
        merge_partials([pa.table({"pe": [0], "n": [1], "extra": [2]})], rule, "q")


# -- grouping and agreement ----------------------------------------------------------------------
def test_group_files_keeps_each_pe_together(tmp_path):
    # 3 PEs x 3 parts each: with 2 files per task, a PE's 3 parts still share one task.
    path = charm_like(pes=3, steps=2).write(tmp_path / "t", parts_per_pe=3)
    trace = open_trace(path)
    groups = group_files(trace, files_per_task=2)
    assert sum(len(g) for g in groups) == len(trace.files) == 9
    for g in groups:
        stems = {Path(f).name.split(".")[0] for f in g}
        assert len(stems) == 1 and len(g) == 3


@pytest.mark.parametrize("files_per_task", [1, 3])
def test_engines_agree_on_fixed_traces(tmp_path, dask_client, files_per_task):
    # charm_like with parts: sums merge across PEs; torch_like: the union busy needs each PE whole.
    _assert_engines_agree(charm_like(pes=5, steps=3).write(tmp_path / "c", parts_per_pe=2), dask_client,
                          files_per_task)
    _assert_engines_agree(torch_like(ranks=3, steps=2).write(tmp_path / "t"), dask_client, files_per_task)


_interval = st.tuples(st.integers(0, 2_000), st.integers(0, 500))
_pe_events = st.lists(
    st.tuples(st.sampled_from(["exec", "exec", "idle", "send", "collective"]), _interval,
              st.sampled_from(["a", "b", "c"]), st.integers(0, 3), st.booleans()),
    min_size=0, max_size=12,
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(per_pe=st.lists(_pe_events, min_size=1, max_size=4), files_per_task=st.integers(1, 3))
def test_engines_agree_property(per_pe, files_per_task, dask_client):
    b = TraceBuilder(len(per_pe))
    for pe, events in enumerate(per_pe):
        b.add(pe, "mark", 0, None)  # every PE has a row, so every PE has a file
        for kind, (t0, dur), name, peer, with_active in events:
            if kind == "send":
                b.send(pe, t0, peer, 8 * (peer + 1), name=name)
            elif kind == "collective":
                b.collective(pe, name, t0, t0 + dur, nbytes=64)
            elif kind == "idle":
                b.idle(pe, t0, t0 + dur)
            else:
                b.exec(pe, t0, t0 + dur, name, active=dur // 2 if with_active else None, coll="C#0")
    with tempfile.TemporaryDirectory() as d:
        _assert_engines_agree(b.write(Path(d) / "t", parts_per_pe=2), dask_client, files_per_task)


# -- errors and construction ---------------------------------------------------------------------
def test_unreachable_scheduler_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(de, "CONNECT_TIMEOUT_S", 1)
    trace = open_trace(charm_like(pes=1, steps=1).write(tmp_path / "t"))
    with pytest.raises(EngineUnavailable) as err:
        DaskEngine(trace, scheduler="tcp://127.0.0.1:9")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("dask scheduler tcp://127.0.0.1:9: unreachable")


def test_dask_engine_starts_its_own_local_cluster(tmp_path):
    trace = open_trace(charm_like(pes=2, steps=1).write(tmp_path / "t"))
    with get_engine(trace, "dask") as eng, DuckDBEngine(trace) as duck:
        assert eng.query("overview_pe") == duck.query("overview_pe")
        assert eng.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": trace.num_rows}]


def test_unknown_engine():
    with pytest.raises(ValueError, match="unknown engine 'spark'"):
        get_engine(None, "spark")  # type: ignore[arg-type]


# -- planner settings ---------------------------------------------------------------------------
def test_asof_joins_stay_asof_whatever_the_estimate(tmp_path):
    """report_bins' innermost-interval join is planned as an ASOF join, not the nested loop DuckDB
    picks when it estimates its input under asof_loop_join_threshold rows (its estimate after the
    window functions is 1 row, and the loop is quadratic)."""
    from paradise.engines import load_sql
    from paradise.report.html.gather import OTHER

    path = torch_like(ranks=2, steps=3).write(tmp_path / "t")
    with DuckDBEngine(open_trace(path)) as eng:
        sql = load_sql("report_bins")
        params = {"t_start": 0, "t_end": 10**9, "bin_ns": 10**7, "n_bins": 100, "by_cat": True, "other": OTHER,
                  "keys": ["forward"]}
        plan = "\n".join(r[1] for r in eng.con.execute("EXPLAIN (FORMAT json) " + sql, params).fetchall())
        assert "ASOF_JOIN" in plan
        assert "NESTED_LOOP_JOIN" not in plan
