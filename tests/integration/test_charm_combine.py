"""comm.json consumed by charm4py runs (hints/runtime/charm_combine.py): message combining keeps results
and per-stream order, and a foreign or damaged comm.json is refused in one line, the run uncombined."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hints.format import HintError, make_hint, provenance, write_hint
from hints.runtime.charm_combine import parse_streams
from tests.integration.charm_helpers import (
    PROGRAMS,
    ROOT,
    RUN_TIMEOUT_S,
    events,
    require_ok,
    rows,
    trace_charm,
)

pytestmark = pytest.mark.timeout(300)

BATCH = 8


def _hints(tmp: Path, program: str, entry: str, pes: int = 2, batch: int = BATCH) -> Path:
    streams = [{"src_pe": s, "dst_pe": 1 - s, "entry": entry, "msgs": 100, "batch": batch} for s in (0, 1)]
    doc = make_hint("comm", {"combine": streams, "threshold": {"min_msgs": 64, "max_bytes": 4096, "batch": BATCH}},
                    provenance=provenance(trace_fingerprint="test", program=program, pes=pes, source="charm4py"),
                    justified_by=[])
    d = tmp / "hints"
    write_hint(d, doc, force=True)
    return d


def _combined(trace: Path, entry: str) -> dict[str, int]:
    """Combined sends of `entry`, the batches that carried them, and those of them whose execution
    ran (matched by msg id); plus streams whose messages ran out of their sending order."""
    con = events(trace)
    (sent,), = rows(con, "SELECT count(*) FROM ev WHERE kind='send' AND name=$e AND args LIKE '%combined%'", e=entry)
    (batches,), = rows(con, "SELECT count(*) FROM ev WHERE kind='send' AND name='deliver'")
    (ran,), = rows(con, """SELECT count(*) FROM ev s JOIN ev x ON x.kind='exec' AND x.msg=s.msg
                           WHERE s.kind='send' AND s.name=$e AND s.args LIKE '%combined%'""", e=entry)
    # msg ids grow in sending order on each PE: per (sending PE, receiving PE), executions must follow them
    (reordered,), = rows(con, """
        WITH x AS (SELECT s.pe AS src, x.pe AS dst, s.msg, x.t0 FROM ev s JOIN ev x ON x.kind='exec' AND x.msg=s.msg
                   WHERE s.kind='send' AND s.name=$e AND s.args LIKE '%combined%'),
             o AS (SELECT msg < lag(msg) OVER (PARTITION BY src, dst ORDER BY t0, msg) AS back FROM x)
        SELECT count(*) FILTER (WHERE back) FROM o""", e=entry)
    return {"sent": sent, "batches": batches, "ran": ran, "reordered": reordered}


def _check_combined(c: dict[str, int]) -> None:
    assert c["sent"] > 0 and c["ran"] == c["sent"] and c["reordered"] == 0
    # each batch carries at most BATCH messages, and most leave full: far fewer batches than messages
    assert -(-c["sent"] // BATCH) <= c["batches"] < c["sent"]


def test_particles_combined_same_result_and_order(tmp_path):
    proc = trace_charm(tmp_path / "t", ROOT / "examples" / "particles.py", "--particles", "600", "--steps", "4",
                       "--check", hints=_hints(tmp_path, "particles", "arrive"))
    require_ok(proc)
    assert "check=ok" in proc.stdout and "out_of_order=0" in proc.stdout
    c = _combined(tmp_path / "t", "arrive")
    _check_combined(c)
    assert c["batches"] * 2 < c["sent"]  # many leavers per step per PE pair: batches mostly full


def test_particles_with_the_batch_the_generator_proposes(tmp_path):
    """particles' `arrive` messages are 88 B at most: the generator proposes batches of 372. A batch
    leaves when full or when the scheduler callback that filled it ends (one `step` broadcast runs
    all of a PE's cells): fewer batches than `step` executions, same result and order."""
    from hints.generators.comm import batch_for

    grid, steps = 6, 4
    proc = trace_charm(tmp_path / "t", ROOT / "examples" / "particles.py", "--particles", "600", "--steps", str(steps),
                       "--grid", str(grid), str(grid), "--check", hints=_hints(tmp_path, "particles", "arrive",
                                                                                   batch=batch_for(88)))
    require_ok(proc)
    assert "check=ok" in proc.stdout and "out_of_order=0" in proc.stdout
    c = _combined(tmp_path / "t", "arrive")
    assert c["sent"] > 0 and c["ran"] == c["sent"] and c["reordered"] == 0
    (execs,), = rows(events(tmp_path / "t"), "SELECT count(*) FROM ev WHERE kind='exec' AND name='step'")
    assert execs == grid * grid * steps and c["batches"] < execs < c["sent"]


def test_stencil2d_combined_direct_copy_halos(tmp_path):
    """stencil2d's halos are numpy arrays, which charm4py sends by direct copy, outside the pickle."""
    proc = trace_charm(tmp_path / "t", ROOT / "examples" / "stencil2d.py", "--grid", "4", "4", "--block", "16",
                       "--iters", "6", hints=_hints(tmp_path, "stencil2d", "halo"))
    require_ok(proc)
    assert "RESULT ok" in proc.stdout
    c = _combined(tmp_path / "t", "halo")
    assert c["sent"] > 0 and c["ran"] == c["sent"] and c["reordered"] == 0


def test_threaded_entry_methods_do_not_deadlock(tmp_path):
    proc = trace_charm(tmp_path / "t", PROGRAMS / "threaded.py", hints=_hints(tmp_path, "threaded", "note"),
                       timeout=120)
    require_ok(proc)
    assert "RESULT ok" in proc.stdout and "out_of_order=0" in proc.stdout
    _check_combined(_combined(tmp_path / "t", "note"))


@pytest.mark.parametrize(("program", "entry", "why"), [
    ("stencil2d", "note", "made for program 'stencil2d', not 'threaded'"),
    ("threaded", "halo", "this program has no entry method 'halo'"),
])
def test_foreign_comm_json_refused_run_uncombined(tmp_path, program, entry, why):
    env_hints = _hints(tmp_path, program, entry)
    cmd = [sys.executable, "-m", "charmrun.start", "+p2", sys.executable, "-m", "paradise.boot.charm",
           str(PROGRAMS / "threaded.py")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=ROOT,
                          env={**os.environ, "PARADISE_HINTS": str(env_hints)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "comm.json refused" in ln]
    assert len(lines) == 1 and why in lines[0] and lines[0].endswith("messages are not combined")
    assert "combining messages" not in proc.stdout + proc.stderr
    assert "RESULT ok" in proc.stdout


def _comm_file(tmp_path, streams):
    from hints.format import make_hint, provenance, write_hint

    prov = provenance(trace_fingerprint="f", program="prog", pes=2, source="charm")
    return write_hint(tmp_path, make_hint("comm", {"combine": streams, "threshold": {}}, provenance=prov,
                                          justified_by=[]), force=True)


def test_parse_streams_refuses_bad_entries(tmp_path):
    good = {"src_pe": 0, "dst_pe": 1, "entry": "a", "batch": 8}
    assert parse_streams(_comm_file(tmp_path, [good]), "prog", 2, {"a"}) == [good]
    for bad, msg in [({**good, "dst_pe": 2}, r"combine\[0\]\.dst_pe should be an integer in 0\.\.1, not 2"),
                     ({**good, "batch": 1}, r"batch should be an integer in 2\.\.65536, not 1"),
                     ({**good, "entry": "b"}, "no entry method 'b'"), ({"src_pe": 0}, r"dst_pe .*not None")]:
        with pytest.raises(HintError, match=msg):
            parse_streams(_comm_file(tmp_path, [bad]), "prog", 2, {"a"})


def _comm_hints(d: Path, program: str, streams: list[dict]) -> Path:
    doc = make_hint("comm", {"combine": streams, "threshold": {"min_msgs": 64, "max_bytes": 4096, "batch": BATCH}},
                    provenance=provenance(trace_fingerprint="test", program=program, pes=2, source="charm4py"),
                    justified_by=[])
    write_hint(d, doc, force=True)
    return d


def test_a_combined_run_is_analysed_into_no_stream_on_the_combiners_own_batches(tmp_path):
    """Issue 27's spin: tune's second iteration traced particles with comm.json, the analysis proposed
    the combiner's `deliver` batches as streams to combine, and that run buffered each batch into its
    own stream for ever. The analysis of a combined run proposes the program's streams only, and a
    comm.json that names `deliver` anyway is refused in one line: the run ends, uncombined."""
    from paradise.analyses import communication
    from paradise.analyses.session import Session
    from paradise.engines.duckdb_engine import DuckDBEngine
    from paradise.store import open_trace

    arrive = [{"src_pe": s, "dst_pe": 1 - s, "entry": "arrive", "batch": BATCH} for s in (0, 1)]
    from hints.generators.comm import COMBINE_MIN_MSGS

    proc = trace_charm(tmp_path / "t", ROOT / "examples" / "particles.py", "--particles", "2000", "--steps", "4",
                       "--check", hints=_comm_hints(tmp_path / "h1", "particles", arrive))
    require_ok(proc)
    con = events(tmp_path / "t")
    batches = rows(con, """SELECT s.pe, count(*) FROM ev s JOIN ev x ON x.kind='exec' AND x.msg=s.msg AND x.pe<>s.pe
                           WHERE s.kind='send' AND s.name='deliver' AND x.cat='runtime' GROUP BY s.pe""")
    # the combiner's batches cross PEs often enough to be proposed as streams of their own
    assert len(batches) == 2 and min(n for _, n in batches) >= COMBINE_MIN_MSGS
    trace = open_trace(tmp_path / "t")
    with DuckDBEngine(trace) as eng:
        (doc,) = communication.analyze(Session(eng, trace)).hints
    proposed = {(s["src_pe"], s["dst_pe"], s["entry"]) for s in doc["combine"]}
    assert proposed == {(s, d, "arrive") for s in (0, 1) for d in (0, 1)}  # a charm4py run: same-PE streams too

    spin = _comm_hints(tmp_path / "h2", "particles",
                       [*arrive, *({**s, "entry": "deliver"} for s in arrive)])
    cmd = [sys.executable, "-m", "charmrun.start", "+p2", sys.executable, "-m", "paradise.boot.charm",
           str(ROOT / "examples" / "particles.py"), "--particles", "600", "--steps", "4", "--check"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PARADISE_HINTS": str(spin)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    refused = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "comm.json refused" in ln]
    assert len(refused) == 1 and "no entry method 'deliver'" in refused[0]
    assert "check=ok" in proc.stdout and "out_of_order=0" in proc.stdout


def _all_streams(d: Path, program: str, entry: str, batch: int) -> Path:
    return _comm_hints(d, program, [{"src_pe": s, "dst_pe": t, "entry": entry, "batch": batch}
                                    for s in (0, 1) for t in (0, 1)])


@pytest.mark.parametrize("traced", [False, True])
def test_same_and_cross_pe_streams_keep_order_and_values(tmp_path, traced):
    """Untraced, the array proxy buffers sends with immutable args unpickled (fast=True); a list
    changed after its send still arrives as sent, in order with the rest of its stream. Traced, every
    message is packed by charm4py (the tracer records its size) and the result is the same."""
    hints = _all_streams(tmp_path / "h", "mixed_sends", "take", batch=16)
    program = PROGRAMS / "mixed_sends.py"
    if traced:
        proc = trace_charm(tmp_path / "t", program, hints=hints)
        require_ok(proc)
        c = _combined(tmp_path / "t", "take")
        assert c["sent"] > 0 and c["ran"] == c["sent"] and c["reordered"] == 0
        (local,), = rows(events(tmp_path / "t"), """SELECT count(*) FROM ev s JOIN ev x ON x.kind='exec' AND x.msg=s.msg
                                                    WHERE s.kind='send' AND s.name='take' AND s.args LIKE '%combined%'
                                                    AND x.pe = s.pe""")
        assert local > 0  # same-PE messages travelled in batches too
    else:
        cmd = [sys.executable, "-m", "charmrun.start", "+p2", sys.executable, "-m", "paradise.boot.charm", str(program)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=ROOT,
                              env={**os.environ, "PARADISE_HINTS": str(hints)})
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert "combining messages on 4 stream(s)" in proc.stdout + proc.stderr
    assert "RESULT ok" in proc.stdout and f"msgs={4 * 4 * 90}" in proc.stdout
    assert f"fast={not traced}" in proc.stdout


def test_untraced_particles_combined_on_all_streams(tmp_path):
    """particles with the four streams the analysis proposes for a charm4py run (batches of 372), no
    tracer: the fast path keeps every particle and every stream's order."""
    hints = _all_streams(tmp_path / "h", "particles", "arrive", batch=372)
    cmd = [sys.executable, "-m", "charmrun.start", "+p2", sys.executable, "-m", "paradise.boot.charm",
           str(ROOT / "examples" / "particles.py"), "--particles", "3000", "--steps", "5", "--check"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, cwd=ROOT,
                          env={**os.environ, "PARADISE_HINTS": str(hints)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "combining messages on 4 stream(s)" in proc.stdout + proc.stderr
    assert "check=ok" in proc.stdout and "out_of_order=0" in proc.stdout and "particles=3000" in proc.stdout
