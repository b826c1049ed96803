"""The torch tracer's per-step rows (step, compute phases, DDP buckets), kept as value lists and
turned into columns at the flush, read back as the rows the tracer was given (no torch needed)."""

from __future__ import annotations

import pyarrow.parquet as pq

from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace

COLS = ("kind", "pe", "t0", "t1", "cat", "coll", "obj", "name", "bytes", "step", "group", "group_size", "dtype")


def _row(kind, t0, t1, name, *, cat=None, coll=None, obj=None, nbytes=None, step=None, group=None, gsize=None,
         dtype=None):
    return dict(zip(COLS, (kind, 2, t0, t1, cat, coll, obj, name, nbytes, step, group, gsize, dtype)))


def test_step_rows_read_back_as_recorded_across_parts(tmp_path):
    from tracers.torch.tracer import Tracer

    tr = Tracer(tmp_path, rank=2, world_size=4, origin_ns=10**18)
    expected = []
    t = 1_000
    tr.compute("forward", 500, 600)  # before the first step's start: written without a step
    expected.append(_row("phase", 500, 600, "forward", cat="compute"))
    for n in range(5):
        start = t
        for name in ("forward", "loss", "backward"):
            tr.compute(name, t, t + 10)
            expected.append(_row("phase", t, t + 10, name, cat="compute", step=n))
            t += 20
        for k, size in enumerate((4096, 1 << 40)):  # one bucket larger than 2**32 bytes
            tr.bucket(t, t + 5, k, size, "bfloat16" if k else "float32", "pg0" if n % 2 else None, 4)
            expected.append(_row("collective", t, t + 5, "allreduce", cat="ddp_bucket", coll="ddp", obj=k,
                                 nbytes=size, step=n, group="pg0" if n % 2 else None, gsize=4,
                                 dtype="bfloat16" if k else "float32"))
            t += 10
        tr.compute("optimizer", t, t + 10)
        expected.append(_row("phase", t, t + 10, "optimizer", cat="compute", step=n))
        t += 20
        tr.step_start = start
        tr.end_step(n, None, t)
        expected.append(_row("step", start, t, "step", step=n))
        if n in (1, 3):
            tr.flush()  # rows spread over several part files
    tr.compute("forward", t, t + 10)  # a step that never ends: written at close, untagged
    expected.append(_row("phase", t, t + 10, "forward", cat="compute"))
    tr.close(complete=True)

    trace = open_trace(tmp_path)
    with DuckDBEngine(trace) as eng:
        select = ", ".join(f'"{c}"' for c in COLS)
        rows = eng.sql(f"SELECT {select} FROM events WHERE kind <> 'mark' ORDER BY t0, kind DESC").to_pylist()
    by_kind_desc = sorted(expected, key=lambda r: r["kind"], reverse=True)  # step, phase, collective
    assert rows == sorted(by_kind_desc, key=lambda r: r["t0"])
    # A step row and its first forward phase share t0: the step row comes first in the file.
    table = pq.read_table(next(tmp_path.glob("*.parquet")), columns=["kind", "t0"]).to_pylist()
    first = next(i for i, r in enumerate(table) if r["kind"] == "step")
    assert table[first + 1] == {"kind": "phase", "t0": table[first]["t0"]}



def test_appended_rows_convert_as_the_generic_writer_does(tmp_path):
    """Rows that are not per-step (marks, failures, c10d calls, checkpoint I/O, record_event) go
    into the spool as tuples and come out of its conversion as TraceWriter's generic column build
    (the oracle) makes them."""
    from paradise.format import COLUMN_NAMES
    from paradise.format.compact import convert
    from tests.trace_writer import TraceWriter
    from tracers.torch.steprows import StepRowWriter

    col = {c: i for i, c in enumerate(COLUMN_NAMES)}

    def row(**values):
        r = [None] * len(COLUMN_NAMES)
        for key, value in values.items():
            r[col[key]] = value
        return tuple(r)

    rows = [
        ("mark", 1, 5, None, None, None, None, "trace_start"),  # a short row: the tail is null
        row(kind="collective", pe=1, t0=10, t1=None, cat="c10d", name="all_reduce", bytes=1 << 40, dtype="float32",
            group="pg0", group_size=2, step=3),
        row(kind="failure", pe=1, t0=20, t1=21, cat="backward", name="RuntimeError", step=None,
            args='{"message": "x"}'),
        row(kind="checkpoint", pe=1, t0=30, t1=40, cat="torch.save", name="torch.save", bytes=None, step=4),
    ]
    expected = TraceWriter(tmp_path / "a", 1)._table(rows)
    steprows = StepRowWriter(tmp_path / "b", 1, source="torch", program="t", pes=2)
    for r in rows:
        steprows.append(r)
    got = pq.read_table(convert(steprows.close())[0])
    assert got.schema.remove_metadata().equals(expected.schema.remove_metadata())
    assert got.to_pylist() == expected.to_pylist()


def test_many_short_steps_between_flushes_keep_their_step_tags(tmp_path):
    """More phase values held between two flushes than the hooks' limit (fast steps): a flush,
    and every phase still tagged with its step."""
    from tracers.torch.tracer import PHASES_MAX, Tracer

    tr = Tracer(tmp_path, rank=0, world_size=1, origin_ns=10**18, flush_interval_s=3600)
    steps = PHASES_MAX // 3  # 2 phases (6 values) a step: twice the limit
    held = 0
    for n in range(steps):
        t = 1_000 + 100 * n
        tr.step_start = t
        tr.compute("forward", t, t + 10)
        tr.compute("optimizer", t + 20, t + 30)
        tr.end_step(n, None, t + 40)
        held = max(held, len(tr._phases))
    tr.close(complete=True)
    assert held <= PHASES_MAX + 3  # flushed before the end
    with DuckDBEngine(open_trace(tmp_path)) as eng:
        got = eng.sql("SELECT count(*) AS n, count(step) AS tagged, count(DISTINCT step) AS steps "
                      "FROM events WHERE kind = 'phase'").to_pylist()
        bad = eng.sql("SELECT count(*) AS n FROM events WHERE kind = 'phase' "
                      "AND step <> (t0 - 1000) // 100").to_pylist()
    assert got == [{"n": 2 * steps, "tagged": 2 * steps, "steps": steps}]
    assert bad == [{"n": 0}]


def test_phases_without_steps_are_written_untagged_and_memory_stays_bounded(tmp_path):
    """A loop of forwards without optimizer steps (an evaluation): past the limit the held phases
    are written untagged, and the tracer never holds more than the limit."""
    from tracers.torch.tracer import PHASES_MAX, Tracer

    tr = Tracer(tmp_path, rank=0, world_size=1, origin_ns=10**18, flush_interval_s=3600)
    count = PHASES_MAX  # three times the limit's phases
    held = 0
    for k in range(count):
        tr.compute("forward", 1_000 + 10 * k, 1_005 + 10 * k)
        held = max(held, len(tr._phases))
    tr.close(complete=True)
    assert held <= PHASES_MAX + 3
    with DuckDBEngine(open_trace(tmp_path)) as eng:
        got = eng.sql("SELECT count(*) AS n, count(step) AS tagged FROM events WHERE kind = 'phase'").to_pylist()
    assert got == [{"n": count, "tagged": 0}]


def test_step_tags_expand_each_chunk_over_its_rows():
    """_tags (a run-length expansion) against a row-by-row reading of the chunks: each row takes the
    step of the chunk it was handed over in when it starts at or after that step's start, else null
    (a flush with no row before its step's start, and one with such rows)."""
    import random

    from paradise.format.spool import NULL
    from tracers.torch.steprows import CHUNK_WIDTH, PHASE_WIDTH, _tags

    rng = random.Random(25)
    for early in (False, True):
        chunks, t0, owner = [], [], []
        for c in range(40):
            start = 1_000 * c
            for _ in range(rng.randrange(0, 5)):  # some chunks hand over no row
                t0.append(start + rng.randrange(-300 if early else 0, 900))
                owner.append(c)
            step = NULL if c % 7 == 3 else 10 + c  # a chunk without a step number
            chunks += [len(t0) * PHASE_WIDTH, 0, step, start, NULL]
        got = _tags(t0, chunks, 0, PHASE_WIDTH)
        steps, starts = chunks[2::CHUNK_WIDTH], chunks[3::CHUNK_WIDTH]
        expected = [steps[c] if t >= starts[c] else NULL for t, c in zip(t0, owner)]
        assert any(t < starts[c] for t, c in zip(t0, owner)) == early  # both of _tags' paths taken
        assert got == expected
