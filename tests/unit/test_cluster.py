"""Dask on a LocalCluster of worker processes, and the memory budget of the embedded engine.

One cluster of 2 worker processes serves the module (starting one costs seconds). DuckDB and Dask
must give the same `analyze --json` on synth traces of every pattern; a worker that dies is
retried once, then the run stops with one line; a cluster without workers never hangs a run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from paradise.cli.main import app
from paradise.engines import dask_engine as de
from paradise.engines.dask_engine import DaskEngine
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.errors import EngineUnavailable, InvalidOption, OutOfMemory
from paradise.events import critpath, execgraph, graphread
from paradise.memory import parse_size
from paradise.store import open_trace
from paradise.synth import synth
from paradise.synth.charm import PATTERNS

runner = CliRunner()


@pytest.fixture(scope="module")
def scheduler():
    """Address of a LocalCluster of 2 worker processes, configured as DaskEngine configures its own."""
    import dask
    from dask.distributed import LocalCluster

    with dask.config.set({"distributed.scheduler.allowed-failures": de.ALLOWED_FAILURES}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                               memory_limit="1GiB")
    yield cluster.scheduler_address
    cluster.close()


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    base = tmp_path_factory.mktemp("synth")
    out = {}
    for i, pattern in enumerate(PATTERNS):
        out[pattern] = base / pattern
        synth(out[pattern], pattern=pattern, events=6_000, pes=3, imbalance=1.4, seed=i, jobs=1)
    out["torch"] = base / "torch"
    synth(out["torch"], kind="torch", events=6_000, pes=3, imbalance=1.4, jobs=1)
    return out


def _json(*args: str) -> dict:
    res = runner.invoke(app, ["analyze", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


@pytest.mark.parametrize("name", [*PATTERNS, "torch"])
def test_duckdb_and_dask_cluster_agree(traces, scheduler, name):
    duck = _json(str(traces[name]))
    dask = _json("--scheduler", scheduler, str(traces[name]))
    assert duck["errors"] == {} and dask["errors"] == {}
    assert len(duck["analyses"]) >= 3  # overview, resilience and the kind's own analyses ran
    assert dask == duck


def _die_once(marker: str) -> int:
    """Kills its worker process the first time it runs, succeeds the second time."""
    if not os.path.exists(marker):
        Path(marker).write_text("died")
        os._exit(1)
    return 42


def _die_always(_: int) -> int:
    os._exit(1)


def test_a_worker_that_dies_is_retried(traces, scheduler, tmp_path):
    trace = open_trace(traces["grid"])
    with DaskEngine(trace, scheduler=scheduler) as eng:
        assert eng.run_tasks(_die_once, [str(tmp_path / "marker")]) == [42]
    assert (tmp_path / "marker").read_text() == "died"


def test_a_task_that_kills_every_worker_is_one_line(traces, scheduler):
    trace = open_trace(traces["grid"])
    with DaskEngine(trace, scheduler=scheduler) as eng:
        with pytest.raises(EngineUnavailable) as err:
            eng.run_tasks(_die_always, [1])
        # the cluster's nannies restart the workers: the engine still works afterwards
        eng.client.wait_for_workers(1, timeout=300)
        assert eng.run_tasks(abs, [-3]) == [3]
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"dask scheduler {scheduler}: a worker died running _die_always on {traces['grid']}")


def test_event_tables_live_on_a_worker(traces, scheduler):
    """The exec graph is built and read on a worker; its rows equal the embedded engine's."""
    trace = open_trace(traces["grid"])
    q = "SELECT count(*) AS n, sum(hash(id, src_id, crit_pred, wait_msg_ns)) AS h FROM exec_graph"
    with DuckDBEngine(trace) as duck:
        execgraph.materialize(duck)
        want = duck.sql(q).to_pylist()
    with DaskEngine(trace, scheduler=scheduler) as eng:
        execgraph.materialize(eng)
        assert eng.sql(q).to_pylist() == want and want[0]["n"] > 0
        workers = eng.client.run(os.getpid)
        assert eng._events.worker in workers and workers[eng._events.worker] != os.getpid()
        streamed = pa.Table.from_batches(list(eng.batches("whatif_replay_graph", batch_rows=7)))
        assert streamed.to_pylist() == eng.query("whatif_replay_graph").to_pylist()


def test_exec_graph_readers_run_as_tasks_and_merge_to_the_embedded_figures(traces, scheduler):
    """The graph's readers run a bucket at a time as tasks on the workers; merged, they give the
    embedded engine's one-bucket figures."""
    trace = open_trace(traces["grid"])
    with DuckDBEngine(trace) as duck:
        want_info = execgraph.materialize(duck)
        want = (graphread.merged(duck, want_info.parts, "events_waits").to_pylist(),
                execgraph.fit_latency(duck, want_info), critpath.critical_path(duck, want_info))
    with DaskEngine(trace, scheduler=scheduler) as eng:
        info = execgraph.materialize(eng, buckets=3)
        per_bucket = graphread.read(eng, info.parts, "events_exec_summary")
        got = (graphread.merged(eng, info.parts, "events_waits").to_pylist(), execgraph.fit_latency(eng, info),
               critpath.critical_path(eng, info))
        assert eng._events is None  # built and read by tasks: no worker holds event tables
    assert len(info.parts) == len(per_bucket) == 3
    assert sum(t.column("execs")[0].as_py() for t in per_bucket) == want_info.execs
    assert dataclasses.replace(info, parts=()) == want_info
    assert got == want and want[2].lo


@pytest.mark.parametrize("row_bytes", [None, 10**6])
def test_object_steps_from_the_workers_buckets_equal_the_embedded_ones(traces, tmp_path, scheduler, row_bytes,
                                                                     monkeypatch):
    import numpy as np

    from paradise.analyses.placement import PERSIST_WINDOWS, STEP_LOAD_CLIP
    from paradise.events import objbuckets
    from paradise.events.objloads import object_steps

    if row_bytes:  # a bucket per few objects: the global ids come from every bucket's objects
        monkeypatch.setattr(objbuckets, "PART_ROW_BYTES", row_bytes)
    long_run = tmp_path / "long"  # 100+ steps: placement compares windows of steps, not steps
    synth(long_run, pattern="grid", events=30_000, pes=2, imbalance=1.4, seed=5, jobs=1)
    for name, path in (("grid", traces["grid"]), ("tree", traces["tree"]), ("long", long_run)):
        trace = open_trace(path)
        with DuckDBEngine(trace) as duck:
            want = object_steps(duck)
        n = len(want.objects)
        # every object, every other one, and one: the columns are the steps any of them ran in
        subsets = [np.flatnonzero(want.ran > 0), np.flatnonzero(want.ran > 0)[::2],
                   np.flatnonzero(want.ran > 0)[-1:]]
        with DaskEngine(trace, scheduler=scheduler, files_per_task=1) as eng:
            got = object_steps(eng)
            got_matrix = got.matrix  # the buckets' files live as long as the engine
            got_windows = [got.windows(oids, STEP_LOAD_CLIP, PERSIST_WINDOWS) for oids in subsets]
            # the steps read from every bucket, as when none of the objects ran in every step
            read_steps = got.loads.windows(subsets[0], got.med[subsets[0]], STEP_LOAD_CLIP, PERSIST_WINDOWS)
            assert eng._events is None  # no worker holds event tables for them
        assert n > 0 and want.stepped == got.stepped, name
        assert np.array_equal(got.steps, want.steps) and np.array_equal(got_matrix, want.matrix, equal_nan=True)
        assert np.array_equal(got.med, want.med, equal_nan=True) and np.array_equal(got.ran, want.ran), name
        assert np.array_equal(read_steps, got_windows[0], equal_nan=True), name
        for oids, windows in zip(subsets, got_windows):
            expect = want.windows(oids, STEP_LOAD_CLIP, PERSIST_WINDOWS)
            assert windows.shape == expect.shape and np.array_equal(windows, expect, equal_nan=True), name
        if name == "long":
            assert len(want.steps) >= 2 * PERSIST_WINDOWS and got_windows[0].shape[1] < len(want.steps)
        assert got.objects.equals(want.objects), name
        assert (got.rows is None) == (want.rows is None) and (got.rows is None or got.rows.equals(want.rows))


def test_message_edges_from_the_graphs_buckets_on_the_workers_equal_the_whole_trace_query(traces, scheduler):
    oracle = (Path(__file__).resolve().parents[1] / "oracles" / "sql" / "communication_edges.sql").read_text()
    for name in ("grid", "tree", "all-to-all"):
        trace = open_trace(traces[name])
        with DuckDBEngine(trace) as duck:
            want = duck.sql(oracle)  # one send -> exec join over the whole trace
        with DaskEngine(trace, scheduler=scheduler, files_per_task=1) as eng:
            got = execgraph.materialize(eng, buckets=3).edges
            assert eng._events is None  # no worker holds event tables for them
        assert len(want) > 0 and got.schema == want.schema
        key = [(c, "ascending") for c in want.column_names]
        assert got.sort_by(key).to_pylist() == want.sort_by(key).to_pylist(), name


def test_losing_the_event_tables_worker_is_one_line(traces, scheduler):
    trace = open_trace(traces["grid"])
    with DaskEngine(trace, scheduler=scheduler) as eng:
        execgraph.materialize(eng)
        assert eng.sql("SELECT count(*) AS n FROM exec_graph").column("n")[0].as_py() > 0  # starts the event tables
        pid = eng.client.run(os.getpid)[eng._events.worker]
        os.kill(pid, signal.SIGKILL)  # the worker process holding the event tables
        with pytest.raises(EngineUnavailable) as err:
            eng.sql("SELECT count(*) FROM exec_graph")
        eng.client.wait_for_workers(2, timeout=300)  # the nanny restarts it
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"dask scheduler {scheduler}: ")
    assert "the event tables" in msg


def test_a_cluster_without_workers_does_not_hang(traces, monkeypatch):
    from dask.distributed import LocalCluster

    monkeypatch.setattr(de, "POLL_S", 0.2)
    monkeypatch.setattr(de, "NO_WORKER_S", 1.0)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty:
        with DaskEngine(open_trace(traces["chain"]), scheduler=empty.scheduler_address) as eng:
            with pytest.raises(EngineUnavailable, match=r"no worker for 1 s \(all died or left\)"):
                eng.query("info_kinds")  # a query of the rows (overview_pe would read the synth files' summaries)


def test_duckdb_spills_in_its_own_directory_and_removes_it(traces):
    with DuckDBEngine(open_trace(traces["grid"]), memory_limit=parse_size("256MiB")) as eng:
        assert eng.sql("SELECT current_setting('memory_limit') AS m").to_pylist() == [{"m": "128.0 MiB"}]  # 0.5 x
        spill = eng.spill_dir
        assert spill and Path(spill).is_dir()
        assert eng.sql("SELECT current_setting('temp_directory') AS d").to_pylist() == [{"d": spill}]
    assert not Path(spill).exists()


def test_out_of_memory_even_spilling_is_one_line(traces):
    with DuckDBEngine(open_trace(traces["grid"]), memory_limit=parse_size("64MiB")) as eng:
        with pytest.raises(OutOfMemory) as err:  # an exact quantile holds every value: it cannot spill
            eng.sql("SELECT quantile_cont(range, 0.5) FROM range(50000000)")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{traces['grid']}: needs more memory than --memory-limit 64.0 MiB allows, even spilling")
    assert msg.endswith("try `paradise analyze --only overview` for the first report, a larger --memory-limit, "
                        "or --engine dask on a cluster")


def test_a_full_spill_disk_is_one_line_naming_the_directory(traces):
    with DuckDBEngine(open_trace(traces["grid"]), memory_limit=parse_size("64MiB")) as eng:
        eng.sql("SELECT 1")
        eng.con.execute("SET max_temp_directory_size = '1MB'")  # what DuckDB does when the disk is full
        with pytest.raises(OutOfMemory) as err:
            eng.sql("SELECT count(*) FROM (SELECT range AS k, count(*) FROM range(20000000) GROUP BY k)")
        spill = eng.spill_dir
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{traces['grid']}: the spill directory {spill} ran out of disk (Out of Memory Error: "
                          "failed to offload")
    assert msg.endswith("set TMPDIR to a directory on a disk with more free space, or give a larger "
                        "--memory-limit so that less spills")


@pytest.mark.parametrize("text, value", [("4GiB", 4 << 30), ("500MB", 500 * 10**6), ("2g", 2 << 30),
                                         ("1073741824", 1 << 30), ("1.5GiB", 3 << 29)])
def test_parse_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text, msg", [("lots", "--memory-limit 'lots': not a size (examples: 4GiB, 500MB, 2G)"),
                                       ("1MB", "--memory-limit '1MB': at least 64 MiB is needed")])
def test_bad_sizes(text, msg):
    with pytest.raises(InvalidOption) as err:
        parse_size(text)
    assert str(err.value) == msg


def test_an_unreachable_scheduler_line_names_the_whole_wait():
    """The Client tries twice (FIRST_TRY_S, then the rest of CONNECT_TIMEOUT_S); distributed's text
    names its last try's timeout, which the line leaves out: it says the whole wait."""
    line = de._why(OSError("Timed out trying to connect to tcp://head:8786 after 4 s"))
    assert line == f"unreachable within {de.CONNECT_TIMEOUT_S} s (Timed out trying to connect to tcp://head:8786)"
    assert de._why(ConnectionRefusedError(111, "Connection refused")).startswith("unreachable: connection refused")
