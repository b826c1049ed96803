"""`paradise import nsys` on small exports built here (tests/nsys_db.py): several processes in one
file, several files on one clock, MPI tables, PyTorch step ranges, and every refusal."""

from __future__ import annotations

import os
import sqlite3
import warnings

import duckdb
import pytest

from paradise.errors import ImportFormatError, SchemaVersionError, TruncatedTrace
from paradise.format.order import time_ordered
from paradise.importers.nsys import import_trace
from paradise.importers.nsys_tables import MSG_RANK_SHIFT
from paradise.store import open_trace
from tests.nsys_db import SESSION_NS, write_export


def _q(path, sql):
    return duckdb.sql(sql.replace("events", f"read_parquet('{path}')")).fetchall()


def test_several_processes_in_one_file(tmp_path):
    src = write_export(tmp_path / "job.sqlite", pids=(100, 200))
    out = import_trace(src, tmp_path / "t.parquet")
    assert sorted(_q(out, "SELECT DISTINCT pe FROM events")) == [(0,), (1,)]
    # per rank: 2 steps, 2 launches + 2 device rows per step, one unlaunched kernel
    for pe in (0, 1):
        steps = _q(out, f"SELECT step, t1 - t0 FROM events WHERE kind = 'step' AND pe = {pe} ORDER BY step")
        assert steps == [(0, 900_000), (1, 900_000)]
        dev = _q(out, f"SELECT name, step, msg FROM events WHERE stream IS NOT NULL AND pe = {pe} ORDER BY t0")
        assert [d[1] for d in dev] == [0, 0, 1, 1, None]  # by their launch: they run after the step range ended
        assert all(d[2] // MSG_RANK_SHIFT == pe for d in dev[:4]) and dev[4][2] is None
    coll = _q(out, "SELECT pe, name, step FROM events WHERE kind = 'collective' ORDER BY pe")
    assert coll == [(0, "ncclKernel_AllReduce_RING_LL_Sum_float", 1), (1, "ncclKernel_AllReduce_RING_LL_Sum_float", 1)]
    p2p = _q(out, "SELECT pe, peer_pe, bytes, step FROM events WHERE cat = 'mpi' AND name = 'MPI_Send' ORDER BY pe, t0")
    assert p2p == [(0, 1, 1 << 20, 0), (0, 1, 1 << 20, 1), (1, 0, 1 << 20, 0), (1, 0, 1 << 20, 1)]
    meta = open_trace(out).metadata
    assert {r["rank_from"] for r in meta["extra"]["ranks"].values()} == {"mpi_thread_name"}
    assert meta["extra"]["ranks"]["1"]["process"] == "train-1"


def test_files_line_up_on_their_session_start(tmp_path):
    a = write_export(tmp_path / "a.sqlite", pids=(100,), session_ns=SESSION_NS)
    b = write_export(tmp_path / "b.sqlite", pids=(200,), session_ns=SESSION_NS + 5_000, mpi_names=False)
    with pytest.warns(UserWarning, match="numbered 0-1"):
        out = import_trace([a, b], tmp_path / "t.parquet")
    first = dict(_q(out, "SELECT pe, min(t0) FROM events WHERE kind = 'step' GROUP BY pe"))
    # b's process is pid 200 (its rows start 0 ns later on its own clock), its session 5 us later
    assert first == {0: 0, 1: 5_000}
    meta = open_trace(out).metadata
    assert meta["origin_ns"] == SESSION_NS + 1_000_000 and meta["clock"]["aligned_to_unix_time"]


def test_rank_option_and_step_pattern(tmp_path):
    src = write_export(tmp_path / "one.sqlite", pids=(100,), mpi_names=False)
    out = import_trace(src, tmp_path / "t.parquet", rank=5, step_pattern=r"ProfilerStep#(\d+)")
    assert _q(out, "SELECT DISTINCT pe FROM events") == [(5,)]
    out = import_trace(src, tmp_path / "u.parquet", step_pattern=r"NoSuchStep(\d+)")
    assert _q(out, "SELECT count(*) FROM events WHERE kind = 'step'") == [(0,)]
    assert _q(out, "SELECT count(*) FROM events WHERE cat = 'user_annotation'") == [(2,)]
    two = write_export(tmp_path / "two.sqlite", pids=(100, 200))
    with pytest.raises(ImportFormatError, match="one traced process, found 2"):
        import_trace(two, tmp_path / "v.parquet", rank=0)
    with pytest.raises(ImportFormatError, match="one group"):
        import_trace(src, tmp_path / "w.parquet", step_pattern="step")


def _truncated(tmp_path):
    src = write_export(tmp_path / "full.sqlite")
    data = src.read_bytes()
    (tmp_path / "x.sqlite").write_bytes(data[: len(data) // 2])


def _foreign(tmp_path):
    con = sqlite3.connect(tmp_path / "x.sqlite")
    con.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    con.commit()
    con.close()


REFUSALS = {
    "truncated": (_truncated, TruncatedTrace, "truncated SQLite file"),
    "foreign": (_foreign, ImportFormatError, "not an Nsight Systems export (no META_DATA_EXPORT"),
    "other-product": (lambda d: write_export(d / "x.sqlite", product="Nsight Compute"), ImportFormatError,
                      "EXPORT_PRODUCT_NAME is 'Nsight Compute'"),
    "no-string-table": (lambda d: write_export(d / "x.sqlite", drop=("StringIds",)), ImportFormatError,
                        "table StringIds missing"),
    "unknown-version": (lambda d: write_export(d / "x.sqlite", version="9.1.0"), SchemaVersionError,
                        "schema version 9.1.0 is not one this importer reads"),
    "empty": (lambda d: (d / "x.sqlite").write_bytes(b""), ImportFormatError, "empty file"),
    "not-sqlite": (lambda d: (d / "x.sqlite").write_text('{"traceEvents": []}'), ImportFormatError,
                   "not a SQLite database"),
    "directory": (lambda d: (d / "x.sqlite").mkdir(), ImportFormatError, "is a directory"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusals_name_the_file_and_what_is_missing(tmp_path, case):
    build, err, text = REFUSALS[case]
    build(tmp_path)
    with pytest.raises(err, match=text.replace("(", r"\(")) as info:
        import_trace(tmp_path / "x.sqlite", tmp_path / "t.parquet")
    assert str(tmp_path / "x.sqlite") in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "t.parquet").exists()


def test_missing_column_is_named(tmp_path):
    src = write_export(tmp_path / "x.sqlite")
    con = sqlite3.connect(src)
    con.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN shortName")
    con.commit()
    con.close()
    with pytest.raises(ImportFormatError, match="CUPTI_ACTIVITY_KIND_KERNEL lacks column.s. shortName"):
        import_trace(src, tmp_path / "t.parquet")


def test_report_without_nsys_says_how_to_export(tmp_path, monkeypatch):
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\x00" * 64)
    monkeypatch.setenv("PATH", str(tmp_path))  # no nsys on PATH
    with pytest.raises(ImportFormatError, match=r"nsys export --type sqlite --output run.sqlite"):
        import_trace(rep, tmp_path / "t.parquet")


def test_cli_refusal_is_one_line_exit_2(tmp_path, cli):
    write_export(tmp_path / "x.sqlite", version="9.1.0")
    rc, out, err = cli("import", "nsys", tmp_path / "x.sqlite", "-o", tmp_path / "t.parquet")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "x.sqlite" in err
    with warnings.catch_warnings():
        rc, out, err = cli("import", "nsys", write_export(tmp_path / "ok.sqlite"), "-o", tmp_path / "t.parquet",
                           "--step-pattern", r"ProfilerStep#(\d+)")
    assert rc == 0 and "2 step" in out, err
    assert os.path.exists(tmp_path / "t.parquet")


def test_report_is_exported_with_nsys_when_on_path(tmp_path, monkeypatch):
    # a stand-in `nsys` that writes the export `nsys export --type sqlite --output OUT REPORT` would
    src = write_export(tmp_path / "made.sqlite")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "nsys"
    fake.write_text('#!/bin/sh\n[ "$1 $2 $3 $4" = "export --type sqlite --output" ] || exit 3\n'
                    f'cp "{src}" "$5"\n')
    fake.chmod(0o755)
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\x00" * 64)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    out = import_trace(rep, tmp_path / "t.parquet")
    assert _q(out, "SELECT count(*) FROM events WHERE kind = 'step'") == [(2,)]
    assert open_trace(out).metadata["extra"]["ranks"]["0"]["file"] == "run.nsys-rep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "made.sqlite", "run.nsys-rep", "t.parquet"]


def test_nvtx_texts_with_the_separator_or_registered(tmp_path):
    # texts are joined per batch with \x1f and split in Arrow; a text holding it is read row by row
    src = write_export(tmp_path / "x.sqlite", steps=3)
    con = sqlite3.connect(src)
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (5, 9, 59, 'a\x1fb', ?)",
                (100 << 24 | 100,))
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid) VALUES (6, 8, 59, 4, ?)",
                (100 << 24 | 100,))
    con.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (7, NULL, 34, '', ?)",
                (100 << 24 | 100,))
    con.commit()
    con.close()
    out = import_trace(src, tmp_path / "t.parquet")
    got = _q(out, "SELECT name, kind, t1 - t0 FROM events WHERE cat IN ('user_annotation', 'nvtx_mark') "
                  "AND kind != 'step' ORDER BY t0")
    assert got == [("a\x1fb", "exec", 4), ("gemm", "exec", 2), ("", "mark", None)]
    assert _q(out, "SELECT count(*) FROM events WHERE kind = 'step'") == [(3,)]


def test_a_bad_export_of_a_report_names_the_report(tmp_path, monkeypatch):
    src = write_export(tmp_path / "made.sqlite", version="9.1.0")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text(f'#!/bin/sh\ncp "{src}" "$5"\n')
    (bin_dir / "nsys").chmod(0o755)
    (tmp_path / "run.nsys-rep").write_bytes(b"\x00" * 64)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    with pytest.raises(SchemaVersionError, match=r"^\S*run\.nsys-rep: Nsight export schema version 9\.1\.0"):
        import_trace(tmp_path / "run.nsys-rep", tmp_path / "t.parquet")


@pytest.mark.parametrize("batch_rows", [2, 65_536])
@pytest.mark.parametrize("statement", [
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 'soon' WHERE rowid = 3",
    "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = 'x' WHERE rowid = 4",
    "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET correlationId = 2.5 WHERE rowid = 5",
])
def test_a_value_of_another_type_in_any_batch_is_refused_naming_its_table(tmp_path, monkeypatch, batch_rows,
                                                                           statement):
    # the ADBC driver types each column from its first batch: a later batch's text is refused too
    from paradise.importers import nsys_sqlite

    monkeypatch.setattr(nsys_sqlite, "BATCH_ROWS", batch_rows)
    src = write_export(tmp_path / "x.sqlite", steps=40)
    con = sqlite3.connect(src)
    con.execute(statement)
    con.commit()
    con.close()
    table = statement.split()[1]
    with pytest.raises(ImportFormatError, match=f"x.sqlite: table {table} holds a value that is not an integer"):
        import_trace(src, tmp_path / "t.parquet")
    assert not (tmp_path / "t.parquet").exists()


def test_rows_are_the_same_whatever_the_batch_size(tmp_path, monkeypatch):
    from paradise.importers import nsys_sqlite

    src = write_export(tmp_path / "x.sqlite", steps=40)
    import_trace(src, tmp_path / "big.parquet")
    monkeypatch.setattr(nsys_sqlite, "BATCH_ROWS", 3)
    import_trace(src, tmp_path / "small.parquet")
    rows = [_q(tmp_path / f"{n}.parquet", "SELECT * EXCLUDE (name, kind, cat), name::VARCHAR, kind::VARCHAR, "
               "cat::VARCHAR FROM events") for n in ("big", "small")]
    assert rows[0] == rows[1] and len(rows[0]) > 100


def _all_rows(path):
    return _q(path, "SELECT * EXCLUDE (name, kind, cat), name::VARCHAR, kind::VARCHAR, cat::VARCHAR FROM events")


def _in_start_order(src):
    """The export with every event table rewritten in start order, as Nsight writes them (the
    builder writes process by process)."""
    con = sqlite3.connect(src)
    for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND (name LIKE 'CUPTI%' OR "
                            "name LIKE 'MPI%' OR name IN ('NVTX_EVENTS', 'OSRT_API'))").fetchall():
        con.execute(f"CREATE TABLE r AS SELECT * FROM {t} ORDER BY start, rowid")
        con.execute(f"DELETE FROM {t}")
        con.execute(f"INSERT INTO {t} SELECT * FROM r ORDER BY rowid")
        con.execute("DROP TABLE r")
    con.commit()
    con.close()
    return src


@pytest.mark.parametrize("batch_rows", [3, 65_536])
@pytest.mark.parametrize("pattern", [None, r"NoSuchStep(\d+)"])
def test_tables_merged_as_read_give_the_rows_of_the_spill_sort(tmp_path, monkeypatch, batch_rows, pattern):
    # tables in start order are merged as they are read (with step ranges too: each launch's step
    # is read first); the oracle is the same import through the format's spill sort
    from paradise.format.order import NotInTimeOrder
    from paradise.importers import nsys, nsys_sqlite

    src = _in_start_order(write_export(tmp_path / "x.sqlite", pids=(100, 200), steps=30))
    monkeypatch.setattr(nsys_sqlite, "BATCH_ROWS", batch_rows)
    sorts = []
    monkeypatch.setattr(nsys, "time_ordered", lambda *a, **k: sorts.append(1) or time_ordered(*a, **k))
    merged = import_trace(src, tmp_path / "merged.parquet", step_pattern=pattern)
    assert sorts == []  # merged, never spilled

    def refuse(*_a, **_k):
        raise NotInTimeOrder
        yield

    monkeypatch.setattr(nsys, "merge_time_ordered", refuse)
    spilled = import_trace(src, tmp_path / "spilled.parquet", step_pattern=pattern)
    rows = _all_rows(merged)
    assert sorts == [1] and rows == _all_rows(spilled) and len(rows) > 300
    steps = _q(merged, "SELECT count(DISTINCT step) FROM events WHERE stream IS NOT NULL")[0][0]
    assert steps == (0 if pattern else 30)  # device rows took their launch's step


def test_a_table_out_of_start_order_is_sorted(tmp_path, monkeypatch):
    from paradise.importers import nsys

    sorts = []
    monkeypatch.setattr(nsys, "time_ordered", lambda *a, **k: sorts.append(1) or time_ordered(*a, **k))
    src = write_export(tmp_path / "x.sqlite", steps=20)
    con = sqlite3.connect(src)  # the runtime calls again, latest first
    con.execute("CREATE TABLE r AS SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME ORDER BY start DESC")
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME")
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM r")
    con.execute("DROP TABLE r")
    con.commit()
    con.close()
    out = import_trace(src, tmp_path / "t.parquet", step_pattern=r"NoSuchStep(\d+)")
    t0 = [r[0] for r in _q(out, "SELECT t0 FROM events")]  # file order (one rank)
    assert t0 == sorted(t0) and len(t0) > 100 and sorts == [1]  # the merge gave way to the spill sort
    runtime = _q(out, "SELECT count(*), sum(t1 - t0) FROM events WHERE cat = 'cuda_runtime'")
    con = sqlite3.connect(src)
    assert runtime == con.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchall()
    assert runtime[0][0] >= 40  # two calls a step


@pytest.mark.parametrize("table", ["NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME"])
def test_the_first_start_is_found_when_a_table_is_out_of_start_order(tmp_path, table):
    # the survey takes each table's first row as its first start; a table written latest first
    # (here with step ranges, so through the spill sort) is found and the file surveyed again
    src = write_export(tmp_path / "x.sqlite", steps=20)
    con = sqlite3.connect(src)
    con.execute(f"UPDATE {table} SET start = start - 500000, end = end - 500000 WHERE rowid = 1")  # the earliest row
    con.execute(f"CREATE TABLE r AS SELECT * FROM {table} ORDER BY start DESC")
    con.execute(f"DELETE FROM {table}")
    con.execute(f"INSERT INTO {table} SELECT * FROM r")
    con.execute("DROP TABLE r")
    con.commit()
    tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'CUPTI%' OR "
                                        "name LIKE 'MPI%' OR name = 'NVTX_EVENTS'")]
    first = min(con.execute(f"SELECT min(start) FROM {t}").fetchone()[0] or 1 << 62 for t in tables)
    con.close()
    out = import_trace(src, tmp_path / "t.parquet")
    t0 = [r[0] for r in _q(out, "SELECT t0 FROM events")]
    assert t0[0] == 0 and t0 == sorted(t0)
    assert open_trace(out).metadata["origin_ns"] == SESSION_NS + first
    assert _q(out, "SELECT count(*) FROM events WHERE kind = 'step'") == [(20,)]


def test_device_rows_take_their_launch_step_when_processes_interleave(tmp_path):
    # two processes' runtime calls interleaved in one batch (start order): their msgs are not in
    # order, and every launched kernel and memset still finds its launch (2 a step, 30 steps)
    src = _in_start_order(write_export(tmp_path / "x.sqlite", pids=(100, 200), steps=30))
    out = import_trace(src, tmp_path / "t.parquet")
    got = _q(out, "SELECT pe, count(step), count(*) FILTER (WHERE msg IS NOT NULL) FROM events "
                  "WHERE stream IS NOT NULL GROUP BY pe ORDER BY pe")
    assert got == [(0, 60, 60), (1, 60, 60)]


@pytest.mark.parametrize("batch_rows", [3, 65_536])
def test_a_process_with_cpu_rows_only_is_found_by_a_second_survey(tmp_path, monkeypatch, batch_rows):
    # the survey takes the pids of CPU tables from their first rows; a process without device rows
    # whose CPU rows come after another's makes the reader ask for a scanning survey, and the rows
    # and metadata are those of a scanning survey from the start
    from paradise.importers import nsys, nsys_sqlite

    src = _in_start_order(write_export(tmp_path / "x.sqlite", pids=(100, 200), steps=3))
    con = sqlite3.connect(src)
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET"):
        con.execute(f"DELETE FROM {t} WHERE globalPid = {200 << 24}")
    con.commit()
    con.close()
    monkeypatch.setattr(nsys_sqlite, "BATCH_ROWS", batch_rows)
    real, guesses = nsys._survey, []
    monkeypatch.setattr(nsys, "_survey", lambda f, exact, guess: guesses.append(guess) or real(f, exact, guess))
    out = import_trace(src, tmp_path / "t.parquet")
    assert guesses == [True, False]
    monkeypatch.setattr(nsys, "_survey", lambda f, exact, guess: real(f, exact, False))
    (tmp_path / "s").mkdir()
    scanned = import_trace(src, tmp_path / "s" / "t.parquet")
    assert _all_rows(out) == _all_rows(scanned)
    assert open_trace(out).metadata == open_trace(scanned).metadata
    con = sqlite3.connect(src)  # rows per process in the export: rank 0 is pid 100 (MPI Rank 0)
    per_pid = {100: 0, 200: 0}
    for t, col in (("NVTX_EVENTS", "globalTid"), ("CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid"),
                   ("CUPTI_ACTIVITY_KIND_KERNEL", "globalPid"), ("CUPTI_ACTIVITY_KIND_MEMSET", "globalPid"),
                   ("MPI_P2P_EVENTS", "globalTid"), ("MPI_COLLECTIVES_EVENTS", "globalTid")):
        for pid, n in con.execute(f"SELECT ({col} >> 24) & 16777215, count(*) FROM {t} GROUP BY 1"):
            per_pid[pid] += n
    con.close()
    assert _q(out, "SELECT pe, count(*) FROM events GROUP BY pe ORDER BY pe") == [(0, per_pid[100]), (1, per_pid[200])]
    assert per_pid[200] > 0


@pytest.mark.parametrize("case", ["one process", "two processes", "a second GPU"])
def test_pids_and_devices_from_first_rows(tmp_path, monkeypatch, case):
    # the survey takes each table's pids and (pid, device) pairs from its first row: whole for one
    # process on one GPU (surveyed once); another process or GPU later in a table makes the reader
    # ask for the scanning survey; rows and metadata are those of a scanning survey from the start
    from paradise.importers import nsys

    src = _in_start_order(write_export(tmp_path / "x.sqlite", pids=(100,) if case == "one process" else (100, 200),
                                       steps=3))
    if case == "a second GPU":
        con = sqlite3.connect(src)
        con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 1 WHERE rowid = (SELECT max(rowid) FROM "
                    "CUPTI_ACTIVITY_KIND_KERNEL)")
        con.commit()
        con.close()
    real, guesses = nsys._survey, []
    monkeypatch.setattr(nsys, "_survey", lambda f, exact, guess: guesses.append(guess) or real(f, exact, guess))
    out = import_trace(src, tmp_path / "t.parquet")
    assert guesses == ([True] if case == "one process" else [True, False])
    monkeypatch.setattr(nsys, "_survey", lambda f, exact, guess: real(f, exact, False))
    (tmp_path / "s").mkdir()
    scanned = import_trace(src, tmp_path / "s" / "t.parquet")
    assert _all_rows(out) == _all_rows(scanned)
    meta = open_trace(out).metadata
    assert meta == open_trace(scanned).metadata
    devices = sorted(d["id"] for r in meta["extra"]["ranks"].values() for d in r["devices"])
    assert devices == {"one process": [0], "two processes": [0, 0], "a second GPU": [0, 0, 1]}[case]
