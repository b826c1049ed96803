"""paradise's Nsight import beside Pipit's own Nsight SQLite reader (`pipit.Trace.from_nsight_sqlite`) on
the two real exports: the rows both read are the same rows (name, thread, start, duration, bytes).

Runs only where PARADISE_PIPIT_SRC names a folder holding Pipit's `pipit` package (PyPI's `pipit` is an
empty placeholder; docs/benchmarks.md says which files and commit): skipped otherwise. Where Pipit's
reader reads less than paradise (no inline NVTX text, no kernel/launch link in this revision), the
test pins the difference to the rows the SQLite tables say it leaves out (docs/importers.md)."""

from __future__ import annotations

import os
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import duckdb
import pytest

from paradise.importers.nsys import import_trace

DATA = ("pipit", "pipit", "tests", "data")
CLOVER = "cloverleaf-nsys/perlmutter-cloverleaf-cuda.sqlite"
SAXPY = "saxpy-mpi-cuda_nsys_perlmutter0.sqlite"
API_CATS = ("cuda_runtime", "cuda_driver", "cuda_api", "cuda_backtrace")


@pytest.fixture(scope="module")
def pipit():
    src = os.environ.get("PARADISE_PIPIT_SRC")
    if not src:
        pytest.skip("PARADISE_PIPIT_SRC is not set (a folder holding Pipit's source; PyPI's pipit has no readers)")
    if not (Path(src) / "pipit" / "readers" / "nsight_sqlite_reader.py").is_file():
        pytest.skip(f"PARADISE_PIPIT_SRC={src} holds no pipit/readers/nsight_sqlite_reader.py")
    sys.path.insert(0, str(Path(src).resolve()))
    try:
        import pipit as module
    finally:
        sys.path.pop(0)
    return module


@pytest.fixture(scope="module")
def imported(real_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("nsys_pipit")
    return {rel: import_trace(real_data.joinpath(*DATA, rel), out / f"{i}.parquet")
            for i, rel in enumerate((CLOVER, SAXPY))}


def _pipit_intervals(pipit, path: Path, trace_types: list[str], cols: tuple[str, ...]) -> list[tuple]:
    """Pipit's Enter rows as (Name, *cols, start, duration), starts relative to the first."""
    ev = pipit.Trace.from_nsight_sqlite(str(path), trace_types=trace_types).events
    enter = ev[ev["Event Type"] == "Enter"]
    start = enter["Timestamp (ns)"].astype("int64")
    t0 = int(start.min())
    dur = enter["_matching_timestamp"].astype("int64") - start
    rows = zip(enter["Name"], *(enter[c] for c in cols), start - t0, dur, strict=True)
    return [tuple(int(v) if not isinstance(v, str) else v for v in r) for r in rows]


def _paradise(path: Path, select: str, where: str) -> list[tuple]:
    """paradise's rows as (select..., start, duration), starts relative to the first selected row."""
    sql = (f"SELECT {select}, t0 - min(t0) OVER () AS start, t1 - t0 AS dur "
           f"FROM read_parquet('{path}') WHERE {where}")
    return [tuple(r) for r in duckdb.sql(sql).fetchall()]


def test_kernels_and_copies_equal_pipit(real_data, imported, pipit):
    path = real_data.joinpath(*DATA, CLOVER)
    got = Counter(_pipit_intervals(pipit, path, ["gpu_trace"], ("streamId",)))
    kinds = dict(sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute(
        "SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER").fetchall())
    rows = _paradise(imported[CLOVER], "cat, args->>'short_name', CAST(args->>'copy_kind' AS INT), stream",
                     "cat IN ('kernel', 'gpu_memcpy')")
    want = Counter((short if cat == "kernel" else kinds[kind], stream, start, dur)
                   for cat, short, kind, stream, start, dur in rows)
    assert Counter(r[0] for r in rows) == {"kernel": 1312, "gpu_memcpy": 279}
    assert got == want


def test_copy_bytes_equal_pipit(real_data, imported, pipit):
    path = real_data.joinpath(*DATA, CLOVER)
    ev = pipit.Trace.from_nsight_sqlite(str(path), trace_types=["gpu_trace"]).events
    enter = ev[(ev["Event Type"] == "Enter") & (ev["type"] != "kernel")]
    got = {k: int(v) for k, v in enter.groupby("Name")["bytes"].sum().items()}
    kinds = dict(sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute(
        "SELECT id, name FROM ENUM_CUDA_MEMCPY_OPER").fetchall())
    want = {kinds[k]: int(b) for k, b in duckdb.sql(
        f"SELECT CAST(args->>'copy_kind' AS INT), sum(bytes) FROM read_parquet('{imported[CLOVER]}') "
        "WHERE cat = 'gpu_memcpy' GROUP BY 1").fetchall()}
    assert got == want and sum(want.values()) > 0


@pytest.mark.parametrize("rel", (CLOVER, SAXPY))
def test_api_calls_equal_pipit(real_data, imported, pipit, rel):
    """Every CUDA runtime/driver row, backtrace rows included (Pipit reads them as calls), with its thread."""
    got = Counter(_pipit_intervals(pipit, real_data.joinpath(*DATA, rel), ["cuda_api"], ("Thread",)))
    want = Counter(_paradise(imported[rel], "name, tid", f"cat IN {API_CATS!r}"))
    assert sum(want.values()) == {CLOVER: 3048, SAXPY: 95}[rel]
    assert got == want


def test_nvtx_ranges_pipit_reads_equal(real_data, imported, pipit):
    """Pipit names NVTX ranges through textId only: the ranges with inline text (saxpy's 5 `saxpy` ranges)
    are not in its frame. Every range it has is paradise's, and the rest are exactly the inline-text ones."""
    path = real_data.joinpath(*DATA, SAXPY)
    got = Counter(_pipit_intervals(pipit, path, ["nvtx"], ("Thread",)))
    ranges = _paradise(imported[SAXPY], "name, tid", "cat IN ('user_annotation', 'mpi')")
    inline = Counter(r[0] for r in sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute(
        "SELECT text FROM NVTX_EVENTS WHERE eventType = 59 AND textId IS NULL"))
    assert len(ranges) == 22 and sum(inline.values()) == 5
    named = [r for r in ranges if r[0] not in inline]
    base = min(r[2] for r in named)
    assert got == Counter((n, t, s - base, d) for n, t, s, d in named)
    assert Counter(r[0] for r in ranges if r[0] in inline) == inline
