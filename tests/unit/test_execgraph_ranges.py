"""The exec graph built a range of PEs at a time, then a msg-hash bucket at a time
(paradise.events.execgraph, paradise.events.partitions), equals the same graph written as a plain
Python walk over the events (tests/oracles/exec_graph_rows.py), and the message edges the buckets
give equal one query over the whole trace (tests/oracles/sql/communication_edges.sql), whatever the
ranges and buckets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from builders import TraceBuilder

from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.events import execgraph, partitions
from paradise.store import open_trace
from tests.oracles.exec_graph_rows import COLUMNS, EVENTS_SQL, GRAPH_SQL, exec_graph_rows
from tests.unit.graph_programs import PROGS, program_trace

EDGES_ORACLE = (Path(__file__).resolve().parents[1] / "oracles" / "sql" / "communication_edges.sql").read_text()
"""communication_edges as one send -> exec join over the whole trace (the definition)."""


def awkward_trace(tmp_path: Path):
    """PEs 0..4 where PE 3 only sends (no exec), one message has send rows on two PEs, one send
    comes from an exec of another object nested in the PE's latest one, two execs start at the
    same instant, two execs have no end (one caused by a message), one message reaches two execs,
    one reaches none and one has no payload size."""
    b = TraceBuilder(pes=5)
    a, c = ("A#0", 1), ("C#1", 2)
    b.exec(0, 0, 100, "A.run", coll=a[0], obj=a[1], index="[1]")
    b.exec(0, 10, 40, "C.inner", coll=c[0], obj=c[1], index="[2]")   # nested in A.run
    m1 = b.send(0, 20, 1, 64, coll=a[0], obj=a[1])                     # sent by A.run, not C.inner
    b.exec(1, 150, 170, "B.recv1", msg=m1, coll="B#2", obj=3, index="[3]")
    m2 = b.send(3, 30, 2, 8, coll=a[0], obj=a[1])                      # a PE without execs
    b.exec(2, 60, 90, "B.recv2", msg=m2, coll="B#2", obj=4, index="[4]")
    m3 = b.send(1, 160, 4, 16, coll="B#2", obj=3)
    b.send(2, 80, 4, 32, msg=m3, coll="B#2", obj=4)                    # the same message, earlier
    b.exec(4, 200, 260, "D.recv", msg=m3, coll="D#3", obj=5, index="[5]")
    b.exec(4, 200, 210, "D.tie", coll="D#3", obj=6, index="[6]")       # same start as D.recv
    b.add(4, "exec", 300, None, name="D.crash", coll="D#3", obj=5)     # no end: not in the graph
    m4 = b.send(4, 205, 0, 4, coll="D#3", obj=6)
    b.exec(0, 400, 420, "A.back", msg=m4, coll=a[0], obj=a[1], index="[1]")
    m5 = b.send(0, 410, 4, 12, coll=a[0], obj=a[1])
    b.add(4, "exec", 500, None, name="D.lost", coll="D#3", obj=6, msg=m5, cat="array")  # no end, a message
    m6 = b.next_msg()
    b.add(0, "send", 415, 415, bytes=48, msg=m6, coll=a[0], obj=a[1])  # a broadcast: two execs
    b.exec(1, 600, 610, "B.bcast", msg=m6, coll="B#2", obj=3, index="[3]", cat="group")
    b.exec(2, 600, 620, "B.bcast", msg=m6, coll="B#2", obj=4, index="[4]", cat="group")
    b.send(2, 700, 3, 8)                                               # no exec, outside any object
    m7 = b.send(1, 705, 0, 0, coll="B#2", obj=3)
    b.exec(0, 800, 810, "A.late", msg=m7, coll=a[0], obj=a[1], index="[1]")
    m8 = b.next_msg()
    b.add(1, "send", 706, 706, peer_pe=0, msg=m8, coll="B#2", obj=3)   # a send of unknown size
    b.exec(0, 820, 830, "A.later", msg=m8, coll=a[0], obj=a[1], index="[1]")
    return open_trace(b.write(tmp_path / "awkward"))


def _same_as_oracle(trace, chunk_execs: int | None, buckets: int | None = None, kept_bytes: int = 0) -> int:
    """Builds the graph in ranges of `chunk_execs` and `buckets` buckets (None: sized from the
    budget), keeping up to `kept_bytes` of partitions in memory (paradise.events.keptparts), and
    returns its row count, asserting it holds exactly the oracle's rows, that no table is left
    behind and that the partition directory holds only the graph's files (the kept buckets' once
    the whole graph's view is asked for)."""
    with DuckDBEngine(trace) as eng:
        views_sql = "SELECT view_name FROM duckdb_views() WHERE NOT internal"
        engine_views = set(eng.sql(views_sql).column("view_name").to_pylist())  # events, running, ...
        info = execgraph.materialize(eng, chunk_execs, buckets, kept_bytes)
        tables = eng.sql("SELECT table_name FROM duckdb_tables()").column("table_name").to_pylist()
        scratch = list(eng._scratch)
        kept = [b for b, p in enumerate(info.parts) if isinstance(p, pa.Table)]
        if tables:  # one bucket, kept in the engine (native_steps): no partition file at all
            assert tables == [execgraph.TABLE] and scratch == [] and info.parts == ()
            assert (buckets or 1) == 1
        else:
            (root,) = scratch
            n = len(info.parts)
            assert n == (buckets or n) and (kept == [] or kept_bytes > 0)

            def left() -> list[str]:
                return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*.parquet"))
            assert left() == sorted(["execs.parquet", "pes.parquet", "sends.parquet",
                                     *(f"edges/b{b}.parquet" for b in range(n)),
                                     *(f"graph/b{b}.parquet" for b in range(n) if b not in kept)])
            assert execgraph.view(eng, info) == execgraph.TABLE
            assert left() == sorted(["execs.parquet", "pes.parquet", "sends.parquet",
                                     *(f"{part}/b{b}.parquet" for b in range(n) for part in ("graph", "edges"))])
        views = [v for v in eng.sql(views_sql).column("view_name").to_pylist() if v not in engine_views]
        assert views == ([] if tables else [execgraph.TABLE])
        want = exec_graph_rows(eng.sql(EVENTS_SQL).to_pylist())
        got = eng.sql(GRAPH_SQL).to_pylist()
        got = [tuple(r[c] for c in COLUMNS) for r in got]
        bad = [(g, w) for g, w in zip(got, want) if g != w]
        assert len(got) == len(want) == info.execs and not bad, f"first differing rows (graph, oracle): {bad[:3]}"
        edges = eng.sql(EDGES_ORACLE)
        key = [(c, "ascending") for c in edges.column_names]
        assert info.edges.schema == edges.schema and len(edges) > 0
        assert info.edges.sort_by(key).to_pylist() == edges.sort_by(key).to_pylist()
        return info.execs


@pytest.mark.parametrize(("chunk_execs", "buckets"), [(1, 1), (3, 1), (3, 2), (1, 5), (None, None), (None, 3)])
def test_awkward_trace_in_any_ranges_and_buckets(tmp_path, chunk_execs, buckets):
    trace = awkward_trace(tmp_path)
    assert _same_as_oracle(trace, chunk_execs, buckets) == 11
    with DuckDBEngine(trace) as eng:
        execgraph.view(eng, execgraph.materialize(eng, chunk_execs, buckets))
        g = {r["name"]: r for r in eng.sql("SELECT g.*, x.name AS src_name FROM exec_graph g "
                                           "LEFT JOIN exec_graph x ON g.src_id = x.id").to_pylist()}
    assert g["B.recv1"]["src_name"] == "A.run"                 # the sender object's exec, not the nested one
    assert g["B.recv2"]["src_pe"] == 3 and g["B.recv2"]["src_id"] is None   # no exec on PE 3
    assert g["B.recv2"]["send_t0"] == 30
    assert g["A.back"]["src_name"] == "D.tie"                  # the sender object's, of two at one instant
    assert g["D.recv"]["src_pe"] == 2 and g["D.recv"]["send_t0"] == 80  # the earliest send row
    assert g["D.recv"]["bytes"] == 32


@pytest.mark.parametrize("name", [*PROGS, "charm_like_parts"])
@pytest.mark.parametrize("buckets", [1, 4])
def test_programs_in_one_exec_ranges_and_buckets_equal_the_oracle(tmp_path, name, buckets):
    assert _same_as_oracle(program_trace(tmp_path, name), 1, buckets) > 0


@pytest.mark.parametrize(("chunk_execs", "buckets"), [(None, 3), (3, 5)])
def test_range_rows_written_a_few_at_a_time_give_the_same_graph(tmp_path, monkeypatch, chunk_execs, buckets):
    """A range's rows put in bucket order in chunks of 2 rows (partitions.write_buckets): each bucket
    file gets several row groups, and the graph is still the oracle's."""
    monkeypatch.setattr(partitions, "WRITE_CHUNK_ROWS", 2)
    assert _same_as_oracle(awkward_trace(tmp_path), chunk_execs, buckets) == 11
    assert _same_as_oracle(program_trace(tmp_path, "charm_like_parts"), chunk_execs, buckets) > 0


def test_partition_sizes_follow_the_budget():
    """A small budget gives more, smaller partitions; a large one partitions of at most the caps
    (one bucket while the graph is at most NATIVE_MAX_EXECS); uncapped (Dask), as large as it allows."""
    from paradise.events.partitions import (
        BUCKET_EXEC_BYTES,
        BUCKET_MAX_EXECS,
        NATIVE_MAX_EXECS,
        RANGE_EXEC_BYTES,
        RANGE_MAX_EXECS,
        sizes,
    )

    execs = 50_000_000
    tiny, small, big = sizes(execs, 256 << 20), sizes(execs, 1 << 30), sizes(execs, 12 << 30)
    assert tiny[0] < small[0] <= big[0] and tiny[1] > small[1] >= big[1] >= 1
    assert tiny == ((256 << 20) // RANGE_EXEC_BYTES, -(-execs * BUCKET_EXEC_BYTES // (256 << 20)))
    assert big == (RANGE_MAX_EXECS, -(-execs // BUCKET_MAX_EXECS))
    assert sizes(execs, 12 << 30, capped=False) == ((12 << 30) // RANGE_EXEC_BYTES,
                                                    -(-execs * BUCKET_EXEC_BYTES // (12 << 30)))
    assert sizes(NATIVE_MAX_EXECS, 12 << 30)[1] == 1 and sizes(NATIVE_MAX_EXECS + 1, 12 << 30)[1] > 1
    assert sizes(NATIVE_MAX_EXECS, 64 << 20)[1] > 1  # one bucket only where the budget holds it
    assert sizes(0, 1 << 30)[1] == 1


def test_partitions_share_a_small_budget_between_the_threads():
    """Under a small budget the step memory is shared by one step per thread, down to partitions of
    SHARED_MIN_EXECS execs; a large budget's partitions stay at the caps; one thread keeps it whole."""
    from paradise.events.partitions import (
        RANGE_EXEC_BYTES,
        RANGE_MAX_EXECS,
        SHARED_MIN_EXECS,
        partition_memory,
        sizes,
    )

    floor = SHARED_MIN_EXECS * RANGE_EXEC_BYTES
    assert partition_memory(2 * floor, 2) == floor  # --memory-limit 2GiB on 2 CPUs: two steps of 10^6 execs
    assert partition_memory(2 * floor, 16) == floor  # more threads than the floor allows: two
    assert partition_memory(2 * floor, 1) == 2 * floor
    assert partition_memory(floor // 2, 8) == floor // 2  # below the floor: one step with all of it
    assert partition_memory(6 << 30, 2) == 3 << 30
    assert sizes(50_000_000, partition_memory(6 << 30, 2))[0] == RANGE_MAX_EXECS  # default budget: the caps
    assert sizes(50_000_000, partition_memory(2 * floor, 2))[0] == SHARED_MIN_EXECS


@pytest.mark.parametrize(("chunk_execs", "buckets"), [(1, 5), (3, 2)])
def test_steps_run_at_once_give_the_oracle_graph(tmp_path, chunk_execs, buckets):
    """Range and bucket steps run several at a time (the budget holds them, DuckDBEngine.run_steps)
    give the oracle's graph; a budget that holds one step runs them one after another."""
    trace = awkward_trace(tmp_path)
    with DuckDBEngine(trace, memory_limit=8 << 30, threads=3) as eng:
        assert eng.threads() == 3
        assert eng.steps_at_once(1 << 20) == 3  # one step per DuckDB thread, the budget holding more
        assert eng.steps_at_once(eng.step_memory()) == 1
        order = eng.run_steps(lambda con, i: con.execute("SELECT $i::INT", {"i": i}).fetchone()[0],
                              [{"i": i} for i in range(7)], step_bytes=1)
        assert order == list(range(7))
    assert _same_as_oracle(trace, chunk_execs, buckets) == 11


def test_pe_ranges_cover_every_pe_once():
    rng = np.random.default_rng(3)
    for _ in range(50):
        pes = sorted(rng.choice(200, size=int(rng.integers(1, 30)), replace=False).tolist())
        counts = [(pe, int(rng.integers(1, 50))) for pe in pes]
        chunk = int(rng.integers(1, 120))
        ranges = execgraph.pe_ranges(counts, chunk)
        assert ranges[0][0] == -(2**31) and ranges[-1][1] == 2**31 - 1
        assert all(hi + 1 == lo for (_, hi), (lo, _) in zip(ranges, ranges[1:]))
        for lo, hi in ranges:
            inside = [n for pe, n in counts if lo <= pe <= hi]
            assert inside, (lo, hi)
            assert sum(inside) <= chunk or len(inside) == 1


def test_a_step_run_again_gives_the_same_graph(tmp_path):
    """A Dask task whose worker died runs again: a range step rewrites its own files, a bucket step
    whose graph file is written does nothing (its inputs are gone by then)."""
    trace = program_trace(tmp_path, "charm_like_parts")
    with DuckDBEngine(trace) as eng:
        execgraph.materialize(eng, 1, 3, kept_bytes=0)
        want = eng.sql(GRAPH_SQL).to_pylist()
        (root,) = eng._scratch
        pes = execgraph._pe_table(eng)
        again = str(tmp_path / "again")
        Path(again).mkdir()
        import pyarrow.parquet as pq

        pq.write_table(pes, partitions.pes_file(again))
        pe_execs = list(zip(pes.column("pe").to_pylist(), pes.column("execs").to_pylist()))
        for i, (lo, hi) in enumerate(execgraph.pe_ranges(pe_execs, 1)):
            for _ in range(2):
                partitions.range_step(eng.con, again, i, lo, hi, 3)
        run_t0 = min(pes.column("pe_t0").to_pylist())
        for b in range(3):
            for _ in range(2):
                partitions.bucket_step(eng.con, again, b, run_t0)
        eng.execute(partitions.graph_view_sql("again", [partitions.graph_file(again, b) for b in range(3)]))
        assert eng.sql(GRAPH_SQL.replace("exec_graph", "again")).to_pylist() == want


def test_a_disk_that_refuses_the_partition_files_is_one_line(tmp_path):
    """A full spill disk (here a file size limit) while the graph is built in buckets: OutOfMemory
    naming the spill directory and what to do, not an analysis failure."""
    trace = program_trace(tmp_path, "charm_like_parts")
    code = (
        "import resource, sys\n"
        "from paradise.engines.duckdb_engine import DuckDBEngine\n"
        "from paradise.errors import OutOfMemory\n"
        "from paradise.events import execgraph\n"
        "from paradise.store import open_trace\n"
        f"eng = DuckDBEngine(open_trace({str(trace.path)!r}))\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))\n"
        "try:\n"
        "    execgraph.materialize(eng, 1, 3, kept_bytes=0)\n"
        "except OutOfMemory as exc:\n"
        "    print('ONE-LINE', exc)\n"
        "finally:\n"
        "    eng.close()\n"
    )
    import signal
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGXFSZ, signal.SIG_IGN))
    lines = [x for x in proc.stdout.splitlines() if x.startswith("ONE-LINE")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    assert "could not write under the spill directory" in lines[0] and "TMPDIR" in lines[0]


def test_a_send_outside_its_objects_active_time(tmp_path):
    """A coroutine of object A (active 10 ns of 0..100) sends at 55 while C runs (50..60): the
    sending exec is the PE's running one (C), and the offset is measured from the object's exec
    (A, started at 0), as the oracle defines it; a send before any exec on its PE has neither."""
    b = TraceBuilder(pes=2)
    b.exec(0, 0, 100, "A.coro", coll="A#0", obj=1, index="[1]", active=10)
    b.exec(0, 50, 60, "C.work", coll="C#1", obj=2, index="[2]")
    m = b.send(0, 55, 1, 8, coll="A#0", obj=1)
    b.exec(1, 70, 80, "B.recv", msg=m, coll="B#2", obj=3, index="[3]")
    early = b.send(1, 5, 0, 8, coll="B#2", obj=3)
    b.exec(0, 200, 210, "A.back", msg=early, coll="A#0", obj=1, index="[1]")
    trace = open_trace(b.write(tmp_path / "coro"))
    for chunk, buckets in ((1, 1), (None, 2)):
        assert _same_as_oracle(trace, chunk, buckets) == 4
    with DuckDBEngine(trace) as eng:
        execgraph.view(eng, execgraph.materialize(eng, 1, 2))
        g = {r["name"]: r for r in eng.sql("SELECT g.*, x.name AS src_name FROM exec_graph g "
                                           "LEFT JOIN exec_graph x ON g.src_id = x.id").to_pylist()}
    assert g["B.recv"]["src_name"] == "C.work" and g["B.recv"]["send_offset_ns"] == 55 - 0
    assert g["A.back"]["src_id"] is None and g["A.back"]["send_offset_ns"] is None


@pytest.mark.parametrize(("chunk_execs", "buckets"), [(1, 5), (3, 2), (2, 3)])
def test_partitions_kept_in_memory_give_the_oracle_graph(tmp_path, monkeypatch, chunk_execs, buckets):
    """Range rows and graph buckets kept as Arrow tables (paradise.events.keptparts) instead of
    files, all of them or as many as a small allowance holds (the rest in files, a bucket's rows from
    both), give the oracle's graph and edges; the readers read the kept buckets."""
    monkeypatch.setattr(partitions, "WRITE_CHUNK_ROWS", 2)
    trace = program_trace(tmp_path, "charm_like_parts")
    where: dict[str, set[int]] = {"kept": set(), "files": set()}
    for name, to in (("keep_buckets", "kept"), ("write_buckets", "files")):
        real = getattr(partitions, name)

        def recorded(*a, _real=real, _to=to):
            where[_to].add(a[2])  # the range
            return _real(*a)
        monkeypatch.setattr(partitions, name, recorded)
    mixed = []
    for allowance in (1 << 30, 2_000, 6_000, 12_000):
        where["kept"].clear(), where["files"].clear()
        assert _same_as_oracle(trace, chunk_execs, buckets, kept_bytes=allowance) > 0
        assert allowance < 1 << 30 or (where["kept"] and not where["files"])
        mixed.append(bool(where["kept"] and where["files"]))
    assert any(mixed)  # some allowance kept some ranges and wrote the others


def test_kept_rows_give_back_the_allowance_they_took():
    """A range's rows kept by bucket (partitions.keep_buckets) are charged what the range reserved,
    and a bucket's take gives its share back; the allowance refuses what it cannot hold."""
    from paradise.events.keptparts import KeptParts

    kept = KeptParts(2_000)
    rows = pa.table({"a": pa.array(np.arange(100, dtype=np.int64)),
                     "s": pa.array([f"v{i % 7}" for i in range(100)]).dictionary_encode()})
    assert kept.reserve(rows.nbytes) and not kept.reserve(2_000 - rows.nbytes + 1)
    codes = (np.arange(100) % 3).astype(np.int32)
    partitions.keep_buckets(kept, partitions.EXECS, 0, rows, codes, 3)
    assert kept.used == rows.nbytes
    left = 100
    for b in range(3):
        pieces = kept.take(partitions.EXECS, b)
        assert [i for i, _ in pieces] == [0]
        assert pieces[0][1].column("a").to_pylist() == list(range(b, 100, 3))
        left -= len(pieces[0][1])
        # its share of the range's bytes by rows (the dictionary once), each charge rounded up
        assert abs(kept.used - rows.nbytes * left / 100) <= 3
    assert kept.take(partitions.EXECS, 0) == []
