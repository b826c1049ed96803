"""Small Nsight Systems-shaped SQLite exports built in tests (the tables and columns the importer
reads, as nsys 2024.5 writes them): several processes in one file, MPI tables and PyTorch step
ranges, which the two real exports lack; and broken variants for the hostile corpus."""

from __future__ import annotations

import sqlite3
from pathlib import Path

SESSION_NS = 1_700_000_000_000_000_000


def gid(pid: int, tid: int | None = None) -> int:
    """A serialized GlobalId: pid at bits 24-47, tid at bits 0-23 (hardware/VM ids left 0)."""
    return (pid << 24) | (pid if tid is None else tid)


TABLES = {
    "StringIds": "id INTEGER PRIMARY KEY, value TEXT NOT NULL",
    "META_DATA_EXPORT": "name TEXT, value TEXT",
    "TARGET_INFO_SESSION_START_TIME": "utcEpochNs INTEGER, utcTime TEXT, localTime TEXT",
    "PROCESSES": "globalPid INTEGER, pid INTEGER, name TEXT",
    "ThreadNames": "nameId INTEGER, priority INTEGER, globalTid INTEGER",
    "TARGET_INFO_GPU": "id INTEGER, name TEXT, uuid TEXT, busLocation TEXT",
    "CUPTI_ACTIVITY_KIND_RUNTIME": "start INTEGER, end INTEGER, eventClass INTEGER, globalTid INTEGER, "
                                   "correlationId INTEGER, nameId INTEGER, returnValue INTEGER, callchainId INTEGER",
    "CUPTI_ACTIVITY_KIND_KERNEL": "start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER, "
                                  "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER, shortName INTEGER, "
                                  "gridX INTEGER, gridY INTEGER, gridZ INTEGER, blockX INTEGER, blockY INTEGER, "
                                  "blockZ INTEGER, registersPerThread INTEGER, staticSharedMemory INTEGER, "
                                  "dynamicSharedMemory INTEGER",
    "CUPTI_ACTIVITY_KIND_MEMSET": "start INTEGER, end INTEGER, deviceId INTEGER, contextId INTEGER, streamId INTEGER, "
                                  "correlationId INTEGER, globalPid INTEGER, value INTEGER, bytes INTEGER, "
                                  "memKind INTEGER",
    "NVTX_EVENTS": "start INTEGER, end INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER, "
                   "color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, "
                   "domainId INTEGER",
    "MPI_P2P_EVENTS": "start INTEGER, end INTEGER, globalTid INTEGER, textId INTEGER, size INTEGER, "
                      "remoteRank INTEGER, tag INTEGER",
    "MPI_COLLECTIVES_EVENTS": "start INTEGER, end INTEGER, globalTid INTEGER, textId INTEGER, size INTEGER, "
                              "rootRank INTEGER",
}


def _ins(con: sqlite3.Connection, table: str, rows: list[tuple]) -> None:
    if rows:
        con.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)


def write_export(path: Path, *, pids: tuple[int, ...] = (100,), mpi_names: bool = True, version: str = "3.13.2",
                 session_ns: int = SESSION_NS, steps: int = 2, product: str = "NVIDIA Nsight Systems",
                 drop: tuple[str, ...] = ()) -> Path:
    """An export with, per process: `steps` ProfilerStep#N ranges, each holding a cudaLaunchKernel
    + kernel and a cudaMemsetAsync + memset, an MPI_Send and an MPI_Allreduce; one unlaunched
    kernel per process."""
    con = sqlite3.connect(path)
    for t, cols in TABLES.items():
        if t not in drop:
            con.execute(f"CREATE TABLE {t} ({cols})")
    strings = ["[Unknown]", "cudaLaunchKernel_v7000", "cudaMemsetAsync_v3020", "void gemm<float>(int)", "gemm",
               "MPI_Send", "MPI_Allreduce", "ncclKernel_AllReduce_RING_LL_Sum_float", "MPI Rank 0", "MPI Rank 1",
               "MPI Rank 2", "main"]
    sid = {s: i for i, s in enumerate(strings)}
    major, minor, micro = (version.split(".") + ["0", "0"])[:3]
    if "StringIds" not in drop:
        _ins(con, "StringIds", list(enumerate(strings)))
    if "META_DATA_EXPORT" not in drop:
        _ins(con, "META_DATA_EXPORT", [("EXPORT_PRODUCT_NAME", product), ("EXPORT_SCHEMA_VERSION", version),
                                       ("EXPORT_SCHEMA_VERSION_MAJOR", major), ("EXPORT_SCHEMA_VERSION_MINOR", minor),
                                       ("EXPORT_SCHEMA_VERSION_MICRO", micro)])
    _ins(con, "TARGET_INFO_SESSION_START_TIME", [(session_ns, "", "")])
    _ins(con, "TARGET_INFO_GPU", [(0, "NVIDIA H100", "uuid-0", "0000:01:00.0")])
    corr = 1
    for r, pid in enumerate(pids):
        g = gid(pid)
        _ins(con, "PROCESSES", [(pid << 24, pid, f"train-{r}")])
        _ins(con, "ThreadNames", [(sid[f"MPI Rank {r}"] if mpi_names else sid["main"], 10, g)])
        base = 1_000_000 + r * 10_000
        for s in range(steps):
            t = base + s * 1_000_000
            _ins(con, "NVTX_EVENTS", [(t, t + 900_000, 59, None, None, None, f"ProfilerStep#{s}", g, None, None, 0)])
            _ins(con, "CUPTI_ACTIVITY_KIND_RUNTIME", [
                (t + 1000, t + 6000, 0, g, corr, sid["cudaLaunchKernel_v7000"], 0, None),
                (t + 7000, t + 9000, 0, g, corr + 1, sid["cudaMemsetAsync_v3020"], 0, None)])
            name = "ncclKernel_AllReduce_RING_LL_Sum_float" if s == 1 else "void gemm<float>(int)"
            _ins(con, "CUPTI_ACTIVITY_KIND_KERNEL", [
                (t + 950_000, t + 990_000, 0, 1, 7, corr, pid << 24, sid[name], sid["gemm"], 4, 1, 1, 128, 1, 1,
                 32, 0, 1024)])
            _ins(con, "CUPTI_ACTIVITY_KIND_MEMSET", [(t + 991_000, t + 992_000, 0, 1, 7, corr + 1, pid << 24, 0,
                                                      4096, 2)])
            _ins(con, "MPI_P2P_EVENTS", [(t + 10_000, t + 20_000, g, sid["MPI_Send"], 1 << 20, (r + 1) % len(pids),
                                          7)])
            _ins(con, "MPI_COLLECTIVES_EVENTS", [(t + 30_000, t + 60_000, g, sid["MPI_Allreduce"], 4096, -1)])
            corr += 2
        _ins(con, "CUPTI_ACTIVITY_KIND_KERNEL", [(base + 5_000_000, base + 5_001_000, 0, 1, 8, None, pid << 24,
                                                  sid["void gemm<float>(int)"], sid["gemm"], 1, 1, 1, 1, 1, 1, 8, 0, 0)])
    con.commit()
    con.close()
    return path
