"""Raw row spools (paradise.format.spool, tracers.spool) and their conversion to Parquet
(paradise.format.compact): rows come back in time order whichever sort path runs, a killed writer's
torn record is dropped, conversion waits for a live writer and is idempotent."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest

from paradise.format.compact import SpoolError, convert, convert_all
from paradise.format.schema import SCHEMA
from paradise.format.spool import NULL, RECORD
from tracers.spool import Spool

COLUMNS = ("kind", "pe", "t0", "t1", "name", "msg")
META = {"source": "charm4py", "program": "p", "pes": 1, "pe": 0}


def _rows(t0s: list[int], name: int) -> bytes:
    return np.array([(0, 0, t, t + 5, name, i) for i, t in enumerate(t0s)], dtype="<i8").tobytes()


def _write(directory, flushes: list[tuple[list[int], list[str], list]], complete: bool | None = True):
    sp = Spool(directory, "pe-00000", COLUMNS, {"tid": 0}, META)
    for i, (t0s, strings, tuples) in enumerate(flushes):
        sp.write(_rows(t0s, i) if t0s else b"", strings, tuples)
    if complete is None:  # killed: the lock goes with the process, nothing closes the spool
        import os

        os.close(sp.fd)
    else:
        sp.close(complete)
    return sp.path


def test_rows_come_back_in_time_order_on_either_path(tmp_path):
    """Packed rows alone are sorted in memory; a tuple-rows record sends the spool through the
    bounded-memory sort (paradise.format.order): both give the stable sort by t0 of the rows in
    written order, computed here from the inputs."""
    rng = random.Random(25)
    flushes = [([rng.randrange(0, 50) for _ in range(40)], ["exec", "w1", "w2"] if i == 0 else [], [])
               for i in range(3)]
    want = sorted(((t, i, k) for i, (t0s, _, _) in enumerate(flushes) for k, t in enumerate(t0s)),
                  key=lambda r: r[0])  # sorted() is stable: written order among equal t0
    names = ["exec", "w1", "w2"]  # flush i's rows name string i
    got = {}
    for label, tuples in (("memory", []), ("spilled", [([], [], [["mark", 0, 10_000, None]])])):
        final, n = convert(_write(tmp_path / label, flushes + tuples))
        table = pq.read_table(final)
        assert n == table.num_rows == 120 + len(tuples)
        got[label] = [(r["t0"], r["name"], r["msg"]) for r in table.to_pylist() if r["kind"] == "exec"]
        assert got[label] == [(t, names[i], k) for t, i, k in want]
        assert b'"complete": true' in pq.read_metadata(final).metadata[b"paradise"]
    assert got["memory"] == got["spilled"]


def test_spool_without_rows_becomes_an_empty_file_with_its_metadata(tmp_path):
    """A PE that recorded nothing still gets its file: no rows, the schema, the clean close's metadata."""
    final, n = convert(_write(tmp_path, []))
    table = pq.read_table(final)
    assert n == table.num_rows == 0 and table.column_names == SCHEMA.names
    assert b'"complete": true' in pq.read_metadata(final).metadata[b"paradise"]


def test_killed_writer_torn_record_dropped_and_marked_incomplete(tmp_path):
    path = _write(tmp_path, [([1, 2], ["exec", "w"], []), ([3], [], [])], complete=None)
    with open(path, "ab") as fh:  # a flush cut short by the kill
        fh.write(RECORD.pack(b"ROWS", 0, 48 * 3) + bytes(50))
    final, n = convert(path)
    assert n == 3 and not path.exists()
    assert b'"complete": false' in pq.read_metadata(final).metadata[b"paradise"]


def test_conversion_waits_for_a_live_writer_and_is_idempotent(tmp_path):
    """A spool whose writer still runs is not taken: conversion waits for its lock (here refused
    after a short wait); once the writer is gone, converting twice is converting once."""
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(__import__('pathlib').Path(__file__).resolve().parents[2])!r})
        from tracers.spool import Spool
        sp = Spool({str(tmp_path)!r}, "pe-00000", {COLUMNS!r}, {{}}, {META!r})
        print("open", flush=True)
        sys.stdin.readline()
        sp.close(True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "open"
        with pytest.raises(SpoolError, match="still being written"):
            convert(tmp_path / "pe-00000.rows", wait_s=0.2)
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
    assert convert_all(tmp_path) == (1, 0)
    assert convert_all(tmp_path) == (0, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pe-00000.parquet"]


def test_null_marker_reads_as_null(tmp_path):
    sp = Spool(tmp_path, "pe-00000", COLUMNS, {}, META)
    sp.write(np.array([(0, 0, 7, NULL, NULL, NULL)], dtype="<i8").tobytes(), ["exec"], [])
    sp.close(True)
    final, _ = convert(sp.path)
    assert pq.read_table(final, columns=["t0", "t1", "name", "msg", "tid"]).to_pylist() == [
        {"t0": 7, "t1": None, "name": None, "msg": None, "tid": None}]


def test_final_metadata_is_what_conversion_writes(tmp_path):
    """paradise.format.spool_scan.final_metadata (the compaction's look at a spool's metadata before
    converting it) steps over rows and strings on compact._Reader's walk: the metadata of the
    header updated by every metadata record, as the converted file holds it; a torn record ends it."""
    from paradise.format import read_metadata
    from paradise.format.spool_scan import final_metadata

    sp = Spool(tmp_path, "pe-00000", COLUMNS, {"tid": 0}, META)
    sp.write(_rows([5, 1], 0), ["exec"], [["mark", 0, 3, None]])
    sp.meta({"clock": {"method": "ping_min_rtt", "residual_ns": 7}})
    sp.write(_rows([9], 0), [], [])
    sp.meta({"clock": {"method": "ping_min_rtt", "residual_ns": 4}, "program": "q"})
    sp.close(True)
    with open(sp.path, "ab") as fh:  # a killed writer's torn record after the close
        fh.write(RECORD.pack(b"META", 0, 1000) + b"{")
    meta = final_metadata(sp.path)
    assert meta == {**META, "program": "q", "clock": {"method": "ping_min_rtt", "residual_ns": 4}, "complete": True}
    final, _ = convert(sp.path)
    stored = read_metadata(pq.read_schema(final).metadata)
    assert {k: v for k, v in stored.items() if k != "format_version"} == meta
