"""The clock refinement measured once, where the trace is written (paradise.store.compaction): the
spools of tests/unit/test_clock_refine.py's three PEs (packed rows and tuple rows, the ping offsets
in a metadata record as the tracers write them) compacted, against the same rows written as an
older trace (Parquet files without a stored refinement, measured at read time)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from paradise.cli.merge import merge_trace
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.errors import NotAParadiseTrace, OutOfMemory
from paradise.format import META_KEY, make_metadata, row_tuple
from paradise.format.spool import NULL
from paradise.store import clockrefine, open_trace
from paradise.store.clock import file_corrections
from paradise.store.clockstore import for_file, stored
from paradise.store.compaction import compact
from paradise.store.validate import MAX_METADATA_BYTES, parse_metadata
from tests.conftest import bin_path
from tests.unit.test_clock_refine import MESSAGES, PING, _clock, _expected_intervals, _rows, _write
from tracers.spool import Spool

COLUMNS = ("kind", "pe", "t0", "t1", "msg")
TEXTS = ["send", "exec"]
EVENTS = "SELECT pe, kind, t0, msg FROM events ORDER BY pe, t0, kind, msg"


def _spool(d, pe: int, rows: list[tuple[str, int, int]], clock: dict) -> None:
    """One PE's spool: its first row a tuple row, the others packed; the clock's
    offsets in a metadata record after the rows (as the tracers' pings set them)."""
    first, rest = rows[:1], rows[1:]
    values = [v for kind, t, m in rest for v in (TEXTS.index(kind), pe, t, NULL, m)]
    spool = Spool(d, f"pe-{pe:05d}", COLUMNS, {}, {"source": "synthetic", "pes": 3, "pe": pe,
                                                  "clock": {"method": "ping_min_rtt", "residual_ns": None}})
    spool.write(struct.pack(f"<{len(values)}q", *values), TEXTS,
                [list(row_tuple(kind=k, pe=pe, t0=t, msg=m)) for k, t, m in first])
    spool.meta({"clock": clock})
    spool.close(True)


def _both(tmp_path, messages=MESSAGES, ping=PING):
    """(compacted spools, older trace) of the same rows and offsets."""
    spooled, older = tmp_path / "spooled", tmp_path / "older"
    older.mkdir()
    for pe, rows in _rows(messages).items():
        _spool(spooled, pe, rows, _clock(pe, *ping.get(pe, (0, 0))))
        _write(older, pe, sorted(rows, key=lambda r: r[1]), _clock(pe, *ping.get(pe, (0, 0))))
    compact(spooled)
    return spooled, older


def _stored(directory) -> list:
    return [json.loads(pq.read_schema(f).metadata[META_KEY])["clock"].get("refinement")
            for f in sorted(directory.glob("*.parquet"))]


def _own_parts(ref: dict) -> list[dict]:
    """What each of the three PEs' files holds of the trace's refinement: everything but `pes`,
    and its own PE's entry (none for PE 0, the reference, which is never shifted)."""
    shared = {k: v for k, v in ref.items() if k != "pes"}
    if "pes" not in ref:
        return [shared] * 3
    return [{**shared, "pes": {str(pe): ref["pes"][str(pe)]} if str(pe) in ref["pes"] else {}} for pe in range(3)]


def _no_measure(monkeypatch) -> None:
    def refuse(*_a, **_k):
        raise AssertionError("measured at read time")

    monkeypatch.setattr(clockrefine, "measure", refuse)


def test_compaction_stores_what_the_reader_measures(tmp_path, monkeypatch):
    spooled, older = _both(tmp_path)
    assert sorted(p.name for p in spooled.iterdir()) == [f"pe-{pe:05d}.parquet" for pe in range(3)]  # scratch gone
    measured = open_trace(older)
    assert _stored(older) == [None] * 3
    ref = measured.metadata["clock"]["refinement"]
    assert sorted(ref["pes"]) == ["1", "2"]
    assert _stored(spooled) == _own_parts(ref)  # PE 1's file holds PE 1's entry alone, PE 0's none
    expected = _expected_intervals(MESSAGES, PING)  # from the raw rows, by another algorithm
    assert {pe: (e["lo_ns"], e["hi_ns"]) for pe, e in ((int(p), e) for p, e in ref["pes"].items())} == expected
    _no_measure(monkeypatch)
    read = open_trace(spooled)  # the stored refinement, no join
    assert read.metadata["clock"] == measured.metadata["clock"]
    by_pe = {m["pe"]: read.corrections.get(str(f)) for f, m in zip(read.files, read.file_metadata)}
    assert by_pe == {m["pe"]: measured.corrections.get(str(f)) for f, m in zip(measured.files, measured.file_metadata)}
    assert by_pe[1] != file_corrections(read.files, read.file_metadata)[str(read.files[1])]  # shifted: can fail
    with DuckDBEngine(read) as a, DuckDBEngine(measured) as b:
        assert a.sql(EVENTS).to_pylist() == b.sql(EVENTS).to_pylist()


def test_info_shows_the_same_lines_for_stored_and_measured(tmp_path):
    spooled, older = _both(tmp_path)
    texts = []
    for trace in (spooled, older):
        proc = subprocess.run([bin_path("paradise"), "info", str(trace)], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "COLUMNS": "250"})  # one line per line, whatever the path's length
        assert proc.returncode == 0, proc.stderr
        texts.append(proc.stdout.replace(str(trace), "TRACE"))
    assert "refined by message_bounds" in texts[0]
    assert texts[0].splitlines() == texts[1].splitlines()


def test_a_trace_without_messages_stores_that(tmp_path, monkeypatch):
    spooled, older = _both(tmp_path, messages=[])
    assert [r["status"] for r in _stored(spooled)] == ["no_messages"] * 3
    assert all("pes" not in r for r in _stored(spooled))
    measured = open_trace(older).metadata["clock"]
    _no_measure(monkeypatch)
    assert open_trace(spooled).metadata["clock"] == measured


def test_contradicting_messages_store_the_inconsistent_outcome(tmp_path, monkeypatch):
    messages, ping = [(0, 1, 5_000_000, -300_000), (1, 0, 6_000_000, 100_000)], {1: (2_000_000, 400_000)}
    spooled, older = _both(tmp_path, messages, ping)
    stored = _stored(spooled)
    assert stored[0]["status"] == "inconsistent" and stored == [stored[0]] * 3
    measured = open_trace(older)
    _no_measure(monkeypatch)
    read = open_trace(spooled)
    assert read.metadata["clock"] == measured.metadata["clock"]
    assert read.corrections == file_corrections(read.files, read.file_metadata)  # ping offsets kept


def _rewrite_clock(path, **clock) -> None:
    """The file with its metadata's `clock` changed (None: the key removed)."""
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[META_KEY])
    for key, value in clock.items():
        if value is None:
            meta["clock"].pop(key)
        else:
            meta["clock"][key] = value
    pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), path)


def test_a_file_without_the_stored_refinement_is_measured_at_read(tmp_path, monkeypatch):
    spooled, older = _both(tmp_path)
    _rewrite_clock(spooled / "pe-00002.parquet", refinement=None)  # e.g. one PE's spool converted alone
    calls = []
    measure = clockrefine.measure
    monkeypatch.setattr(clockrefine, "measure", lambda *a, **k: calls.append(1) or measure(*a, **k))
    assert open_trace(spooled).metadata["clock"] == open_trace(older).metadata["clock"]
    assert len(calls) == 2  # both traces measured


def test_a_damaged_stored_refinement_is_one_line(tmp_path):
    spooled, _ = _both(tmp_path)
    bad = spooled / "pe-00001.parquet"
    stored = _stored(spooled)[1]
    _rewrite_clock(bad, refinement={**stored, "pes": {"1": {**stored["pes"]["1"], "shift_ns": "300us"}}})
    with pytest.raises(NotAParadiseTrace, match="pe-00001.parquet: metadata clock.refinement pes"):
        open_trace(spooled)
    proc = subprocess.run([bin_path("paradise"), "info", str(spooled)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and str(bad) in proc.stderr, proc.stderr


def _refused_in_one_line(trace, bad, match: str) -> None:
    with pytest.raises(NotAParadiseTrace, match=match):
        open_trace(trace)
    proc = subprocess.run([bin_path("paradise"), "info", str(trace)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and str(bad) in proc.stderr, proc.stderr


def test_a_file_without_its_own_entry_is_one_line(tmp_path):
    """PE 2's ping states an error, so a refined outcome shifts it: its file must hold its entry."""
    spooled, _ = _both(tmp_path)
    bad = spooled / "pe-00002.parquet"
    _rewrite_clock(bad, refinement={**_stored(spooled)[2], "pes": {}})
    _refused_in_one_line(spooled, bad, "pe-00002.parquet: metadata clock.refinement has no entry for its own PE 2")


def test_a_file_disagreeing_with_the_trace_wide_outcome_is_one_line(tmp_path):
    spooled, _ = _both(tmp_path)
    bad = spooled / "pe-00001.parquet"
    stored = _stored(spooled)[1]
    _rewrite_clock(bad, refinement={**stored, "messages": stored["messages"] + 1})
    _refused_in_one_line(spooled, bad, "pe-00001.parquet: metadata clock.refinement disagrees with pe-00000.parquet's")
    _rewrite_clock(bad, refinement={**stored, "status": "no_messages", "pes": {}})
    _refused_in_one_line(spooled, bad, "pe-00001.parquet: metadata clock.refinement disagrees with pe-00000.parquet's")
    _rewrite_clock(bad, refinement={**stored, "residual_ns": stored["pes"]["1"]["error_ns"] - 1})
    _refused_in_one_line(spooled, bad, r"pes\[1\].error_ns is above the trace's residual_ns")


def test_two_files_disagreeing_on_a_pe_is_one_line(tmp_path):
    """PE 1's file also holding an entry for PE 2 (as a file of the previous layout, the whole
    table, does) is read; one that differs from PE 2's own is refused."""
    spooled, older = _both(tmp_path)
    stored = _stored(spooled)
    pe1 = spooled / "pe-00001.parquet"
    _rewrite_clock(pe1, refinement={**stored[1], "pes": {**stored[1]["pes"], **stored[2]["pes"]}})
    assert open_trace(spooled).metadata["clock"] == open_trace(older).metadata["clock"]
    other = {**stored[2]["pes"]["2"], "shift_ns": stored[2]["pes"]["2"]["shift_ns"] + 1}
    _rewrite_clock(pe1, refinement={**stored[1], "pes": {**stored[1]["pes"], "2": other}})
    _refused_in_one_line(spooled, spooled / "pe-00002.parquet",
                         r"pe-00002.parquet: metadata clock.refinement pes\[2\] disagrees with pe-00001.parquet's")


def test_measuring_at_read_keeps_to_the_memory_limit(tmp_path):
    """An older trace is measured within the command's memory limit (DuckDB refuses 64 KiB for the
    join: one line); a stored refinement needs no memory for it."""
    spooled, older = _both(tmp_path)
    with pytest.raises(OutOfMemory, match="older: aligning the clocks by the messages needs more memory than 64"):
        open_trace(older, memory_limit=64 << 10)
    assert open_trace(spooled, memory_limit=64 << 10).metadata["clock"] == open_trace(older).metadata["clock"]


def test_a_reader_converting_leftover_spools_stores_the_refinement(tmp_path):
    """A killed launcher left the spools: the first read converts them, and stores the refinement
    (what the launcher would have) for the reads after it."""
    left = tmp_path / "left"
    for pe, rows in _rows(MESSAGES).items():
        _spool(left, pe, rows, _clock(pe, *PING.get(pe, (0, 0))))
    first = open_trace(left)
    assert _stored(left) == _own_parts(first.metadata["clock"]["refinement"])
    assert first.metadata["clock"]["refinement"]["status"] == "refined"


def test_merge_of_a_stored_trace_keeps_it_without_measuring(tmp_path, monkeypatch):
    spooled, older = _both(tmp_path)
    expected = open_trace(older)
    _no_measure(monkeypatch)
    out = merge_trace(spooled, tmp_path / "m.parquet")
    merged = open_trace(out)
    assert merged.metadata["clock"]["refinement"] == expected.metadata["clock"]["refinement"]
    with DuckDBEngine(merged) as a, DuckDBEngine(expected) as b:
        assert a.sql(EVENTS).to_pylist() == b.sql(EVENTS).to_pylist()


def _synthetic_files(n: int) -> tuple[dict, list, list[dict]]:
    """A refined outcome over n PEs (PE 0 the reference, every other PE shifted, with ns values of
    a real run's size) and each PE's file and metadata as compaction writes them; no run."""
    pes, offsets = {}, {}
    for pe in range(n):
        error = 0 if pe == 0 else 150_000 + pe % 97_331
        offsets[pe] = {"t_start": 1_000_000 + pe, "start_ns": -40_000_000 + 13 * pe, "t_end": 9_000_000_000 + pe,
                       "end_ns": -39_000_000 + 11 * pe, "error_ns": error}
        if pe:
            shift = pe % 200_003 - 100_000
            pes[str(pe)] = {"shift_ns": shift, "lo_ns": shift - error // 2, "hi_ns": shift + error // 2,
                            "error_ns": error // 2}
    ref = {"method": clockrefine.METHOD, "min_latency_ns": 1, "messages": 5 * n, "backward_before": 2 * n,
           "status": "refined", "residual_ns": max(e["error_ns"] for e in pes.values()), "pes": pes}
    files = [Path("run") / f"pe-{pe:06d}.parquet" for pe in range(n)]
    metas = [{"source": "charm4py", "program": "stencil", "pes": n, "pe": pe, "complete": True,
              "clock": {"method": "ping_min_rtt", "residual_ns": 250_000, "offsets": {str(pe): offsets[pe]},
                        "refinement": for_file(ref, pe)}} for pe in range(n)]
    return ref, files, metas


def test_each_file_metadata_stays_small_at_100k_pes():
    """The whole per-PE table in every file would pass MAX_METADATA_BYTES near 80k PEs (and the
    trace could be neither written nor read); each file's own part keeps one size, and the reader
    rebuilds the table from the 100k files' parts."""
    ref, files, metas = _synthetic_files(100_000)
    whole = make_metadata(**{**metas[1], "clock": {**metas[1]["clock"], "refinement": ref}})[META_KEY]
    assert len(whole) > MAX_METADATA_BYTES  # the layout before: every file holds the whole table
    sizes = [len(make_metadata(**m)[META_KEY]) for m in metas]
    small = [len(make_metadata(**m)[META_KEY]) for m in _synthetic_files(3)[2]]
    assert max(sizes) < 1024 and max(sizes) - max(small) <= 32  # O(1) in the PE count: more digits only
    for f, m in zip(files[::9_999], metas[::9_999]):
        assert parse_metadata(f, make_metadata(**m))["clock"]["refinement"]["pes"] == (
            {str(m["pe"]): ref["pes"][str(m["pe"])]} if m["pe"] else {})
    assert stored(files, metas) == ref
