"""`paradise import nsys` on the two real Nsight Systems exports (pipit's test data): every table's
rows, durations, links and NVTX ranges against SQL run here on the export, and the GPU analyses
against figures computed here from the SQLite tables."""

from __future__ import annotations

import csv
import importlib
import json
import sqlite3
from collections import Counter, defaultdict

import duckdb
import numpy as np
import pytest
from accounting import union_length

from paradise.analyses import gpu_idle, gpu_kernels, gpu_launches, gpu_queue
from paradise.analyses.base import AnalysisConfig
from paradise.analyses.session import Session
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.importers.nsys import import_trace
from paradise.store import open_trace

annotations_analysis = importlib.import_module("paradise.analyses.annotations")  # the package's name is the __future__ feature
DATA = ("pipit", "pipit", "tests", "data")
CLOVER = "cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite"
SAXPY = "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
FILES = (CLOVER, SAXPY)
TABLE_CATS = {
    "CUPTI_ACTIVITY_KIND_KERNEL": ("kernel",),
    "CUPTI_ACTIVITY_KIND_MEMCPY": ("gpu_memcpy",),
    "CUPTI_ACTIVITY_KIND_MEMSET": ("gpu_memset",),
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION": ("cuda_sync",),
    "CUPTI_ACTIVITY_KIND_RUNTIME": ("cuda_runtime", "cuda_driver", "cuda_api", "cuda_backtrace"),
    "OSRT_API": ("os_runtime",),
}
DEVICE = ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")


def _sql(real_data, rel):
    return sqlite3.connect(f"file:{real_data.joinpath(*DATA, rel)}?mode=ro", uri=True)


def _tables(con) -> set[str]:
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _origin(con) -> int:
    """The first start over the imported rows: paradise's t0 = 0 (one file, one session start). NVTX
    rows are ranges and marks (domain creation and thread naming are not events)."""
    starts = [con.execute(f"SELECT min(start) FROM {t}").fetchone()[0] for t in TABLE_CATS if t in _tables(con)]
    if "NVTX_EVENTS" in _tables(con):
        starts.append(con.execute("SELECT min(start) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)").fetchone()[0])
    return min(s for s in starts if s is not None)


@pytest.fixture(scope="module")
def imported(real_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("nsys")
    return {rel: import_trace(real_data.joinpath(*DATA, rel), out / f"{i}.parquet") for i, rel in enumerate(FILES)}


def _rows(path, sql: str) -> list[tuple]:
    return duckdb.sql(sql.replace("events", f"read_parquet('{path}')")).fetchall()


@pytest.mark.parametrize("rel", FILES)
def test_every_table_row_count_and_duration(real_data, imported, rel):
    con = _sql(real_data, rel)
    checked = 0
    for table, cats in TABLE_CATS.items():
        if table not in _tables(con):
            continue
        want = con.execute(f"SELECT count(*), coalesce(sum(end - start), 0) FROM {table}").fetchone()
        got = _rows(imported[rel], f"SELECT count(*), coalesce(sum(t1 - t0), 0) FROM events WHERE cat IN {cats!r}"
                    .replace(",)", ")"))[0]
        assert tuple(got) == tuple(want), table
        checked += want[0]
    assert checked > 0
    meta = open_trace(imported[rel]).metadata
    assert meta["source"] == "nsys" and meta["clock"]["method"] == "nsys_session_start"
    session = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()[0]
    assert meta["origin_ns"] == session + _origin(con)


@pytest.mark.parametrize("rel", FILES)
def test_names_from_the_string_table(real_data, imported, rel):
    con = _sql(real_data, rel)
    want = Counter(dict(con.execute("SELECT s.value, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                                    "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1").fetchall()))
    got = Counter(dict(_rows(imported[rel], "SELECT name, count(*) FROM events WHERE cat = 'kernel' GROUP BY 1")))
    assert got == want and sum(want.values()) > 0
    want = dict(con.execute("SELECT s.value, sum(end - start) FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                            "JOIN StringIds s ON s.id = r.nameId GROUP BY 1").fetchall())
    got = dict(_rows(imported[rel], "SELECT name, sum(t1 - t0) FROM events WHERE cat LIKE 'cuda_%' "
                                    "AND stream IS NULL GROUP BY 1"))
    assert got == want
    want = con.execute("SELECT sum(bytes), count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY").fetchone()
    assert tuple(_rows(imported[rel], "SELECT sum(bytes), count(*) FROM events WHERE cat = 'gpu_memcpy'")[0]) == want


@pytest.mark.parametrize("rel", FILES)
def test_every_kernel_has_its_launch(real_data, imported, rel):
    con = _sql(real_data, rel)
    assert set(DEVICE) & set(_tables(con))  # the export holds device activity to check
    for table in DEVICE:
        if table not in _tables(con):
            continue
        want = con.execute(
            f"SELECT s.value, count(*) FROM {table} d JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
            "ON r.correlationId = d.correlationId AND r.eventClass != 67 JOIN StringIds s ON s.id = r.nameId "
            "GROUP BY 1").fetchall()
        cat = TABLE_CATS[table][0]
        got = _rows(imported[rel], f"SELECT l.name, count(*) FROM events d JOIN events l ON l.msg = d.msg "
                                   f"AND l.kind = 'exec' AND l.stream IS NULL WHERE d.cat = '{cat}' GROUP BY 1")
        assert sorted(got) == sorted(want), table
        n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        assert sum(c for _, c in want) == n  # in these exports every device row has its launch


def test_nvtx_ranges_equal(real_data, imported):
    con = _sql(real_data, SAXPY)
    origin = _origin(con)
    want = sorted((s - origin, e - origin, name, tid & 0xFFFFFF) for s, e, name, tid in con.execute(
        "SELECT n.start, n.end, coalesce(n.text, s.value), n.globalTid FROM NVTX_EVENTS n "
        "LEFT JOIN StringIds s ON s.id = n.textId WHERE n.eventType IN (59, 60)"))
    got = sorted(_rows(imported[SAXPY], "SELECT t0, t1, name, tid FROM events WHERE cat IN ('user_annotation', 'mpi')"))
    assert got == want and len(want) == 22
    mpi = _rows(imported[SAXPY], "SELECT count(*) FROM events WHERE cat = 'mpi'")[0][0]
    assert mpi == sum(1 for w in want if w[2].startswith("MPI_"))  # the MPI domain's ranges are MPI calls
    meta = open_trace(imported[SAXPY]).metadata
    assert meta["extra"]["ranks"]["0"]["rank_from"] == "mpi_thread_name"
    assert meta["extra"]["ranks"]["0"]["devices"][0]["name"] == "NVIDIA A100-SXM4-40GB"


# --- GPU analyses against figures computed from the SQLite tables --------------------------------------------


def _device(con, origin):
    """(start, end, stream, launch start, launch end, kind bit) per device row with times on paradise's clock."""
    out = []
    for table, bit in zip(DEVICE, (1, 4, 4)):
        if table in _tables(con):
            out += [(s - origin, e - origin, st, ls - origin if ls is not None else None,
                     le - origin if le is not None else None, bit) for s, e, st, ls, le in con.execute(
                f"SELECT d.start, d.end, d.streamId, r.start, r.end FROM {table} d LEFT JOIN "
                "CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = d.correlationId AND r.eventClass != 67")]
    return out




def _analyze(path, mod):
    trace = open_trace(path)
    with DuckDBEngine(trace) as eng:
        return mod.analyze(Session(eng, trace), AnalysisConfig())


@pytest.mark.parametrize("rel", FILES)
def test_kernel_types(real_data, imported, rel):
    con = _sql(real_data, rel)
    dev = _device(con, _origin(con))
    span = max(d[1] for d in dev) - min(d[0] for d in dev)
    comp = union_length([(d[0], d[1]) for d in dev if d[5] == 1])
    rank = _analyze(imported[rel], gpu_kernels).sections["ranks"][0]
    assert rank["span_ns"] == span
    assert rank["idle_ns"] == span - union_length([(d[0], d[1]) for d in dev])
    assert rank["computation_ns"] == comp
    types = {t["type"]: t for t in _analyze(imported[rel], gpu_kernels).sections["types"]}
    assert types["memory"]["kernels"] == sum(1 for d in dev if d[5] == 4)


@pytest.mark.parametrize("rel", FILES)
def test_idle_causes(real_data, imported, rel):
    con = _sql(real_data, rel)
    by_stream = defaultdict(list)
    for d in _device(con, _origin(con)):
        by_stream[d[2]].append(d)
    want: dict[tuple[int, str], int] = Counter()
    for stream, rows in by_stream.items():
        rows.sort(key=lambda d: (d[0], d[1]))
        for prev, d in zip(rows, rows[1:]):
            gap = max(d[0] - prev[1], 0)
            cause = ("host_wait" if d[3] is not None and d[3] > prev[1] else
                     "kernel_wait" if gap < gpu_idle.KERNEL_DELAY_NS else "other")  # no same-stream waits here
            want[(stream, cause)] += gap
    got = {(s["stream"], c): s[f"{c}_ns"] for s in _analyze(imported[rel], gpu_idle).sections["streams"]
           for c in gpu_idle.CAUSES}
    assert {k: v for k, v in got.items() if v} == {k: v for k, v in want.items() if v}


@pytest.mark.parametrize("rel", FILES)
def test_queue_and_launches(real_data, imported, rel):
    con = _sql(real_data, rel)
    dev = [d for d in _device(con, _origin(con)) if d[3] is not None]
    edges = sorted([(d[3], 1) for d in dev] + [(d[1], -1) for d in dev])
    q = np.cumsum([e[1] for e in edges])
    stream = _analyze(imported[rel], gpu_queue).sections["streams"][0]
    assert len({d[2] for d in dev}) == 1
    assert stream["count"] == len(edges) and stream["max"] == q.max()
    t = np.array([e[0] for e in edges])
    assert stream["time_mean"] == round(float((q[:-1] * np.diff(t)).sum() / (t[-1] - t[0])), 4)
    rank = _analyze(imported[rel], gpu_launches).sections["ranks"][0]
    assert rank["launches"] == len(dev)
    assert rank["cpu_ns"] == sum(d[4] - d[3] for d in dev)
    assert rank["gpu_ns"] == sum(d[1] - d[0] for d in dev)
    assert rank["delay_ns"] == sum(max(d[0] - d[4], 0) for d in dev)


def test_annotations_cover_the_kernels_launched_inside(real_data, imported):
    con = _sql(real_data, SAXPY)
    ann = con.execute("SELECT start, end, globalTid FROM NVTX_EVENTS WHERE text = 'saxpy'").fetchall()
    launched = con.execute("SELECT r.start, r.globalTid, k.end - k.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN "
                           "CUPTI_ACTIVITY_KIND_KERNEL k ON k.correlationId = r.correlationId "
                           "WHERE r.eventClass != 67").fetchall()
    covered = [d for s, e, g in ann for t, lg, d in launched if lg == g and s <= t < e]
    row = next(r for r in _analyze(imported[SAXPY], annotations_analysis).sections["cpu"] if r["name"] == "saxpy")
    assert row["spans"] == len(ann) == 5
    assert row["total_ns"] == sum(e - s for s, e, _ in ann)
    assert (row["kernels"], row["kernel_ns"]) == (len(covered), sum(covered))


def test_analyze_json_has_the_gpu_sections(imported, cli):
    rc, out, err = cli("analyze", imported[CLOVER], "--json")
    assert rc == 0, err
    got = json.loads(out)["analyses"]
    for name in ("gpu_kernels", "gpu_idle", "gpu_queue", "gpu_launches"):
        assert got[name]["characteristics"], name


# --- Pipit's expected output (its reader's test file) --------------------------------------------------------


def _pipit(real_data, name):
    rows = list(csv.DictReader(open(real_data.joinpath(*DATA, "cloverleaf-nsys", name))))
    return [(r["Name"], int(r["Timestamp (ns)"]), int(r["_matching_timestamp"]), r) for r in rows
            if r["Event Type"] == "Enter"]


def test_agrees_with_pipits_gpu_trace(real_data, imported):
    con = _sql(real_data, CLOVER)
    shift = -_origin(con)
    want = Counter()
    for name, enter, leave, r in _pipit(real_data, "cloverleaf_gpu_trace.csv"):
        key = name if r["type"] == "kernel" else r["type"].replace("CUDA_MEMCPY_KIND_", "")
        want[(key, int(r["streamId"]), enter + shift, leave - enter)] += 1
    got = Counter()
    for args, name, stream, t0, t1 in _rows(imported[CLOVER], "SELECT args, name, stream, t0, t1 FROM events "
                                                              "WHERE cat IN ('kernel', 'gpu_memcpy')"):
        key = json.loads(args)["short_name"] if name.startswith("void") else name.split()[1].upper()
        got[(key, stream, t0, t1 - t0)] += 1
    assert got == want and sum(want.values()) == 1312 + 279


def test_agrees_with_pipits_cuda_api_trace(real_data, imported):
    shift = -_origin(_sql(real_data, CLOVER))
    want = Counter((n, e + shift, lv - e, int(r["Thread"])) for n, e, lv, r in
                   _pipit(real_data, "cloverleaf-cuda_api_trace.csv"))
    got = Counter((n, t0, t1 - t0, tid) for n, t0, t1, tid in _rows(
        imported[CLOVER], "SELECT name, t0, t1, tid FROM events WHERE cat LIKE 'cuda_%' AND stream IS NULL"))
    assert got == want and sum(want.values()) == 3048
