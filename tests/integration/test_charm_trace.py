"""The charm4py tracer on real `charmrun +p2` runs: structure of what it records.

Counts follow from the programs in tests/charm_programs (arithmetic in the comments); no
assertion depends on timing.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from paradise.store import open_trace
from tests.conftest import bin_path
from tests.integration.charm_helpers import PROGRAMS, ROOT, events, require_ok, rows, trace_charm
from tests.shared_runs import RING, RING_ITERS

pytestmark = pytest.mark.timeout(300)

ITERS = RING_ITERS
CELLS = 6  # ring.py: 2 x 3 array


@pytest.fixture(scope="module")
def ring(traced_run) -> Path:
    """ring.py traced once per session per recorder (tests/shared_runs.py); read only."""
    out, proc = traced_run(*RING)
    require_ok(proc)
    assert "RESULT ok" in proc.stdout
    return out


@pytest.fixture(scope="module")
def mover(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("migrate") / "trace"
    proc = trace_charm(out, PROGRAMS / "migrate.py")
    require_ok(proc)
    assert "RESULT ok" in proc.stdout
    return out


def test_files_and_metadata(ring):
    trace = open_trace(ring)
    assert sorted(f.name for f in trace.files) == ["pe-00000.parquet", "pe-00001.parquet"]
    assert trace.complete
    meta = trace.metadata
    assert (meta["source"], meta["program"], meta["pes"]) == ("charm4py", "ring", 2)
    assert meta["clock"]["method"].startswith("host-monotonic")
    assert meta["clock"]["residual_ns"] is not None
    assert meta["extra"]["argv"] == [str(ITERS)]
    # the native recorder unless tests/integration/test_charm_recorders.py runs these tests without it
    off = os.environ.get("PARADISE_NATIVE_RECORDER") == "0"
    assert meta["extra"]["recorder"] == ("python (PARADISE_NATIVE_RECORDER=0)" if off else "native")


def test_every_execution_recorded(ring):
    con = events(ring)
    got = dict(rows(con, "SELECT name, count(*) FROM ev WHERE kind='exec' AND coll='Cell#0' GROUP BY name"))
    # per step: a broadcast next_step (6 execs) and one token per element (6); then finish (6)
    assert got == {"__init__": CELLS, "next_step": ITERS * CELLS, "token": ITERS * CELLS, "finish": CELLS}
    bumps = rows(con, "SELECT count(*), count(DISTINCT pe) FROM ev WHERE kind='exec' AND name='bump'")
    assert bumps == [(CELLS, 2)]  # element k bumps Counter member k % 2
    bad = rows(con, "SELECT count(*) FROM ev WHERE kind='exec' AND (t1 < t0 OR active < 0 OR active > t1 - t0)")
    assert bad == [(0,)]


def test_every_send_recorded_and_linked(ring):
    con = events(ring)
    sends = dict(rows(con, "SELECT name, count(*) FROM ev WHERE kind='send' AND coll IN ('Cell#0','Main#0') "
                           "AND name <> '__init__' GROUP BY name"))
    assert sends == {"next_step": ITERS, "token": ITERS * CELLS, "finish": 1, "bump": CELLS}
    # every send reaches executions carrying its msg: 1 for point-to-point, all 6 for broadcasts
    links = rows(con, """
        SELECT s.name, s.args, count(e.msg) AS execs FROM ev s LEFT JOIN ev e
          ON e.kind = 'exec' AND e.msg = s.msg
        WHERE s.kind = 'send' GROUP BY s.name, s.args, s.msg""")
    assert all(n >= 1 for _, _, n in links), links
    assert {n for name, args, n in links if name == "token"} == {1}
    assert {n for name, args, n in links if name == "next_step"} == {CELLS}
    # the receiver named in the send row is the one that executed it
    mism = rows(con, """
        SELECT count(*) FROM ev s JOIN ev e ON e.kind = 'exec' AND e.msg = s.msg
        WHERE s.kind = 'send' AND s.args IS NULL
          AND (e.coll <> s.peer_coll OR e.obj <> s.peer_obj OR e.pe <> s.peer_pe OR e.peer_pe <> s.pe)""")
    assert mism == [(0,)]


def test_payload_bytes_include_direct_copy(ring):
    con = events(ring)
    # token carries a 16-float64 numpy array (128 B) and b"xyz"*(i+1): sent outside the pickle
    sizes = rows(con, "SELECT step, min(bytes) FROM ev WHERE kind='send' AND name='token' GROUP BY step ORDER BY step")
    assert [s for s, _ in sizes] == list(range(ITERS))
    assert all(b > 128 + 3 * (s + 1) for s, b in sizes)


def test_placement_and_steps(ring):
    con = events(ring)
    place = rows(con, "SELECT index, pe FROM ev WHERE kind='create' AND coll='Cell#0' ORDER BY index")
    # charm4py's default map: balanced blocks of the row-major index (6 elements, 2 PEs)
    assert place == [("[0,0]", 0), ("[0,1]", 0), ("[0,2]", 0), ("[1,0]", 1), ("[1,1]", 1), ("[1,2]", 1)]
    steps = rows(con, "SELECT step, count(*) FROM ev WHERE kind='step' GROUP BY step ORDER BY step")
    assert steps == [(i, CELLS) for i in range(ITERS)]
    # next_step(i) marks step i, so its execution is tagged i
    tagged = rows(con, "SELECT count(*) FROM ev WHERE kind='exec' AND name='next_step' AND step IS NULL")
    assert tagged == [(0,)]


def test_idle_and_unfinished_main(ring):
    con = events(ring)
    idle = rows(con, "SELECT pe, count(*), min(t1 - t0) FROM ev WHERE kind='idle' GROUP BY pe ORDER BY pe")
    assert [pe for pe, _, _ in idle] == [0, 1] and all(d > 0 for _, _, d in idle)
    main = rows(con, "SELECT args, active < t1 - t0 FROM ev WHERE kind='exec' AND name='main'")
    assert main == [('{"unfinished":true}', True)]  # main never returns from charm.exit()


def test_migration_recorded(mover):
    con = events(mover)
    place = dict(rows(con, "SELECT index, pe FROM ev WHERE kind='create' AND coll='Mover#0'"))
    migs = rows(con, "SELECT index, peer_pe, pe FROM ev WHERE kind='migrate' ORDER BY index")
    # every element moves once, from its creation PE to the other PE
    assert [(i, place[i], 1 - place[i]) for i in sorted(place)] == migs
    syncs = rows(con, "SELECT name, count(*), max(step) FROM ev WHERE kind='step' GROUP BY name ORDER BY name")
    assert syncs == [("AtSync", 8, 1), ("resumeFromSync", 8, 2)]  # 4 elements x 2 LB steps


def test_failure_leaves_incomplete_trace(tmp_path):
    out = tmp_path / "trace"
    proc = trace_charm(out, PROGRAMS / "fail.py")
    assert proc.returncode != 0
    assert "planned failure in step 2" in proc.stdout + proc.stderr
    assert "paradise/cli" not in proc.stderr  # the program's error, not a paradise traceback
    trace = open_trace(out)
    assert not trace.complete
    con = events(out)
    assert rows(con, "SELECT max(step) FROM ev WHERE kind='step'")[0][0] >= 1
    info = subprocess.run([bin_path("paradise"), "info", "--json", str(out)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert info.returncode == 0 and json.loads(info.stdout)["complete"] is False


def test_killed_run_keeps_flushed_parts(tmp_path):
    out = tmp_path / "trace"
    # a whole traced example run takes 2.5-3.5 s here (pytest --durations); the 1 s tick flushes both
    # steps long before the kill
    proc = trace_charm(out, PROGRAMS / "hang.py", timeout=8)
    assert proc.returncode == 124 and "timed out" in proc.stderr
    trace = open_trace(out)  # part files flushed by the 1 s tick while the PEs were idle
    assert not trace.complete and trace.num_rows > 0
    con = events(out)
    assert rows(con, "SELECT count(DISTINCT step) FROM ev WHERE kind='step'") == [(2,)]


def test_refuses_existing_output(ring):
    proc = trace_charm(ring, PROGRAMS / "ring.py")
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("paradise: error:") and "--force" in proc.stderr


def test_analyze_runs_on_trace(ring, tmp_path):
    proc = subprocess.run([bin_path("paradise"), "analyze", str(ring)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


EXAMPLES = {  # small sizes: structure only
    "histsort": ["--elements", "8", "--keys-per-element", "2000"],
    "stencil2d": ["--grid", "4", "4", "--block", "16", "--iters", "6"],
    "masterworker": ["--workers", "4", "--tasks", "30"],
    "wavefront": ["--elements", "6", "--waves", "4", "--block", "1000", "--block-reps", "1", "--local-reps", "1"],
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_traced(name, tmp_path):
    program = ROOT / "examples" / f"{name}.py"
    assert program.exists(), f"{program}: the example is missing"
    out = tmp_path / "trace"
    proc = trace_charm(out, program, *EXAMPLES[name])
    require_ok(proc)
    assert "RESULT ok" in proc.stdout
    assert open_trace(out).complete
    con = events(out)
    # every send is executed somewhere, and every exec that names a msg has its send
    assert rows(con, "SELECT count(*) FROM ev s WHERE s.kind='send' AND NOT EXISTS "
                     "(SELECT 1 FROM ev e WHERE e.kind='exec' AND e.msg=s.msg)") == [(0,)]
    assert rows(con, "SELECT count(*) FROM ev e WHERE e.kind='exec' AND e.msg IS NOT NULL AND NOT EXISTS "
                     "(SELECT 1 FROM ev s WHERE s.kind='send' AND s.msg=e.msg)") == [(0,)]
    # every user object was created once and executed at least its constructor
    users = rows(con, "SELECT coll, count(*), count(DISTINCT obj) FROM ev WHERE kind='create' "
                      "AND cat IN ('array','chare') GROUP BY coll")
    assert users and all(n == distinct for _, n, distinct in users)
    marks = open(program).read().count("step(")
    if marks:
        assert rows(con, "SELECT count(*) > 0 FROM ev WHERE kind='step'") == [(True,)]
    an = subprocess.run([bin_path("paradise"), "analyze", str(out)], capture_output=True, text=True,
                        timeout=300, cwd=ROOT)
    assert an.returncode == 0, an.stderr[-2000:]


@pytest.mark.parametrize("native", ["1", "0"])
def test_packed_rows_round_trip(tmp_path, monkeypatch, native):
    """rowbuf: packed rows (codes, NULLs) of either recorder come back as the schema's typed, nullable columns."""
    import pyarrow.parquet as pq

    from paradise.format import SCHEMA
    from paradise.format.compact import convert
    from tracers.charm.parts import PackedWriter
    from tracers.charm.rowbuf import NULL, Strings, make_recorder

    monkeypatch.setenv("PARADISE_NATIVE_RECORDER", native)
    rec, kind_ran = make_recorder()
    assert kind_ran.startswith("native" if native == "1" else "python")

    strings = Strings()
    kind, coll, idx, name, args = (strings.code(t) for t in ("exec", "Cell#0", "[1,2]", "work", '{"a":1}'))
    w = PackedWriter(tmp_path, 3, strings, rec, source="charm4py", program="t", pes=4)
    w.recorder.row(kind, 3, 10, 20, 7, NULL, coll, 5, idx, name, 99, 1, NULL, NULL, 64, 2, args)
    w.recorder.row(kind, 3, 30, 40, 9, NULL, NULL, NULL, NULL, name, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
    for text in ('{"é":"ü"}', "", '{"a":1}'):  # args gathered byte-wise: multi-byte, empty, repeated texts
        w.recorder.row(kind, 3, 45, 46, 1, NULL, NULL, NULL, NULL, name, NULL, NULL, NULL, NULL, NULL, NULL,
                       strings.code(text))
    w.flush()
    w.append_dict(kind="step", pe=3, t0=50, name="step", step=4)  # tuple rows share the file
    table = pq.ParquetFile(convert(w.close())[0]).read()
    assert table.schema.remove_metadata() == SCHEMA
    got = table.select(["kind", "pe", "t0", "t1", "active", "coll", "obj", "index", "name", "msg", "peer_pe",
                        "bytes", "step", "args", "tid"]).to_pylist()
    assert got[0] == {"kind": "exec", "pe": 3, "t0": 10, "t1": 20, "active": 7, "coll": "Cell#0", "obj": 5,
                      "index": "[1,2]", "name": "work", "msg": 99, "peer_pe": 1, "bytes": 64, "step": 2,
                      "args": '{"a":1}', "tid": 0}
    assert got[1]["coll"] is None and got[1]["msg"] is None and got[1]["step"] is None
    assert [g["args"] for g in got[2:5]] == ['{"é":"ü"}', "", '{"a":1}']
    assert (got[5]["kind"], got[5]["step"]) == ("step", 4)


def test_packed_flushes_compacted(tmp_path):
    """A run that flushed appends to its spool while it runs (no Parquet); the conversion after the
    run writes one complete file in time order and removes the spool."""
    import pyarrow.parquet as pq

    from paradise.format.compact import convert
    from tracers.charm.parts import PackedWriter
    from tracers.charm.rowbuf import NULL, Strings, make_recorder

    rec, _ = make_recorder()
    strings = Strings()
    kind, name = strings.code("exec"), strings.code("work")
    w = PackedWriter(tmp_path, 0, strings, rec, source="charm4py", program="t", pes=1)
    for part in range(3):
        for i in range(5):
            w.recorder.row(kind, 0, part * 10 + i, part * 10 + i + 1, 1, NULL, NULL, NULL, NULL, name, NULL, NULL,
                           NULL, NULL, NULL, NULL, strings.code(f"p{part}"))
        w.flush()
    assert [p.name for p in tmp_path.iterdir()] == ["pe-00000.rows"]
    final, n = convert(w.close())
    assert [p.name for p in tmp_path.iterdir()] == ["pe-00000.parquet"] and n == 15
    got = pq.ParquetFile(final).read(columns=["t0", "args"]).to_pylist()
    assert got == [{"t0": p * 10 + i, "args": f"p{p}"} for p in range(3) for i in range(5)]
    assert open_trace(final).complete


def test_traced_process_imports_no_pyarrow(tmp_path):
    """The PEs append raw rows to spools: pyarrow (and the readers' libraries) are never imported
    there; the launcher converts the spools after the run."""
    out = tmp_path / "trace"
    proc = trace_charm(out, PROGRAMS / "modules.py", pes=1)
    require_ok(proc)
    assert "HEAVY []" in proc.stdout
    assert " rows in " in proc.stdout.split("paradise: traced ")[-1]  # the conversion, timed apart
    assert sorted(p.name for p in out.iterdir()) == ["pe-00000.parquet"]
    assert open_trace(out).complete


def test_killed_launcher_leaves_spools_the_reader_converts(tmp_path):
    """SIGKILL of `paradise trace charm` leaves the PEs' spools (nothing converted them); opening the
    trace converts them, keeping every row flushed before the kill, marked incomplete."""
    import signal
    import time

    from paradise.format.compact import read, spools

    out = tmp_path / "t"
    proc = subprocess.Popen([bin_path("paradise"), "trace", "charm", "--pes", "2", "-o", str(out),
                             str(PROGRAMS / "hang.py")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert any("waiting forever" in line for line in proc.stdout)

        def steps_flushed() -> set:
            return {s for f in spools(out) for t in read(f) for k, s in
                    zip(t.column("kind").to_pylist(), t.column("step").to_pylist()) if k == "step"}

        deadline = time.monotonic() + 60
        while steps_flushed() != {0, 1} and time.monotonic() < deadline:  # the 1 s tick flushes them
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(spools(out)) == 2 and not list(out.glob("*.parquet"))
    trace = open_trace(out)  # waits for the dying PEs to let go of their spools, then converts them
    assert not trace.complete and not spools(out)
    assert rows(events(out), "SELECT count(DISTINCT step) FROM ev WHERE kind='step'") == [(2,)]
