"""The exec graph of a run, kept as a table of the engine: every exec with its message's send,
its sending exec and its critical predecessor (its columns: paradise.events.bucketjoin), and the
message edges that the same join gives.

It is built once per run (`materialize`) and read by SQL (critical path, waits, the message
cost fit) and, for traces small enough to replay, by the what-if replay as numpy arrays. The
client never holds it otherwise: its rows live in Parquet files under the engine's spill directory.
The per-PE work (numbering the execs, finding each send's sending exec) runs a range of PEs at a
time and writes its rows into `msg`-hash buckets; the send -> exec join then runs a bucket at a time
(paradise.events.partitions), and `exec_graph` is a view over the buckets' Parquet files.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paradise.events import graphread, keptparts, msgedges, partitions

LATENCY_FIT_QUANTILE = 0.9
"""Gaps above this quantile are dropped before fitting (queueing noise, clock jitter)."""
MIN_FIT_SAMPLES = 5
"""Fewer cross-PE messages that found their receiver idle than this: no least-squares fit."""
FEW_SAMPLES_QUANTILE = 0.1
"""...then the latency is this quantile of all cross-PE send -> exec delays (fast deliveries)."""


@dataclass(frozen=True)
class LatencyModel:
    """Cost of a message: a_ns + ns_per_byte * bytes across PEs, local_ns on one PE."""

    a_ns: float
    ns_per_byte: float
    local_ns: float
    overhead_ns: float
    """Scheduler gap between two executions on a busy PE (the median of such gaps)."""
    samples: int = 0
    overhead_mean_ns: float = 0.0
    """The mean of those gaps: on a loaded machine the OS deschedules a busy PE between
    executions, which the median does not see (calibration may use it)."""

    def to_dict(self) -> dict[str, float]:
        return {"a_ns": round(self.a_ns, 1), "ns_per_byte": round(self.ns_per_byte, 4),
                "local_ns": round(self.local_ns, 1), "overhead_ns": round(self.overhead_ns, 1),
                "samples": self.samples, "overhead_mean_ns": round(self.overhead_mean_ns, 1)}



EXACT_QUANTILE_MAX_EXECS = 4_000_000
"""Up to this many executions the fit's quantiles are exact (the client merges a count per distinct
value, up to one per sample); above, from values rounded to graphread.ROUND_BITS significant bits
in buckets of more than graphread.EXACT_VALUES_MAX distinct values."""

TABLE = "exec_graph"
"""The engine view that holds the graph."""


@dataclass(frozen=True)
class ExecGraphInfo:
    """Size and span of the materialized graph, and where its critical path ends."""

    execs: int
    t_min: int
    t_max: int
    max_pe: int
    last_id: int | None
    last_t1: int | None
    parts: tuple[Any, ...] = field(default=(), compare=False)
    """The graph's buckets, which its readers read one at a time (paradise.events.graphread): each
    its file, or its rows kept as an Arrow table (paradise.events.keptparts); none: the engine's
    one-bucket table TABLE."""
    root: str = field(default="", compare=False)
    """The partition directory, where view() writes the kept buckets' files."""
    pe_first: dict[int, int] = field(default_factory=dict)
    """Each PE's first exec: its id -> its start (events_exec_pe_stats), where a critical path
    without a cycle begins."""
    edges: pa.Table | None = field(default=None, compare=False)
    """The message edges (communication_edges), from the same buckets' join (paradise.events.msgedges)."""

    @property
    def n(self) -> int:
        return self.execs

    @property
    def makespan_ns(self) -> int:
        return self.t_max - self.t_min if self.execs else 0

    def pes(self, stated: int | None) -> int:
        """The PE count: the trace's stated one, or more when execs ran beyond it."""
        return int(max(stated or 0, self.max_pe + 1 if self.execs else 1))


def pe_ranges(pe_execs: list[tuple[int, int]], chunk_execs: int) -> list[tuple[int, int]]:
    """Inclusive ranges of PE numbers, each holding whole PEs of about `chunk_execs` execs or one
    larger PE. `pe_execs` is (pe, execs) in PE order. Together the ranges cover every int32, so a
    PE that only sent messages (no exec) falls in one too."""
    ranges, lo, n = [], -(2**31), 0
    for i, (pe, execs) in enumerate(pe_execs):
        n += execs
        last = i == len(pe_execs) - 1
        if last or n + pe_execs[i + 1][1] > chunk_execs:
            hi = 2**31 - 1 if last else pe
            ranges.append((lo, hi))
            lo, n = hi + 1, 0
    return ranges or [(-(2**31), 2**31 - 1)]


def _pe_table(engine: Any) -> pa.Table:
    """Each PE's exec count, first id and first start (events_exec_pe_stats), in PE order."""
    t = engine.query("events_exec_pe_stats").sort_by("pe")
    execs = t.column("execs").to_numpy().astype(np.int64)
    off = (np.cumsum(execs) - execs).astype(np.int64)  # each PE's first id (none for a trace without execs)
    return pa.table({"pe": t.column("pe"), "execs": pa.array(execs), "off": pa.array(off),
                     "pe_t0": t.column("pe_t0").cast(pa.int64())})


def _range_files(trace: Any, lo: int, hi: int) -> list[str]:
    """The trace's files that may hold rows of PEs lo..hi (a file without a stated PE: every range)."""
    return [str(f) for f, meta in zip(trace.files, trace.file_metadata)
            if meta.get("pe") is None or lo <= int(meta["pe"]) <= hi]


def materialize(engine: Any, chunk_execs: int | None = None, buckets: int | None = None,
                kept_bytes: int | None = None) -> ExecGraphInfo:
    """Builds the graph in partitions (paradise.events.partitions: range steps, then bucket steps,
    sized from the engine's memory per step, shared by the steps its threads run side by side
    (partition_memory), unless given) and returns its summary. One bucket on an engine that keeps
    tables in memory (`native_steps`: DuckDB) skips the files: `exec_graph` is then a table, at
    in-memory speed. Otherwise such an engine keeps partitions as Arrow tables up to `kept_bytes`
    (default: keptparts.allowance of its budget) instead of writing them, and `exec_graph` becomes
    the view of the bucket files when every bucket has one, else at view()."""
    pes = _pe_table(engine)
    pe_execs = list(zip(pes.column("pe").to_pylist(), pes.column("execs").to_pylist()))
    execs = sum(n for _, n in pe_execs)
    capped = getattr(engine, "capped_partitions", True)
    memory = partitions.partition_memory(engine.step_memory(), engine.threads()) if capped else engine.step_memory()
    chunk, n_buckets = partitions.sizes(execs, memory, capped=capped)
    chunk, n_buckets = chunk_execs or chunk, buckets or n_buckets
    ranges = pe_ranges(pe_execs, chunk)
    run_t0 = int(pc.min(pes.column("pe_t0")).as_py() or 0) if len(pes) else 0
    in_process = getattr(engine, "native_steps", False)
    native = n_buckets == 1 and in_process
    kept = None
    if in_process and not native:
        room = keptparts.allowance(engine.memory_limit, engine.step_memory()) if kept_bytes is None else kept_bytes
        kept = keptparts.KeptParts(room) if room > 0 else None
    with_kept = {"kept": kept} if kept is not None else {}
    root = "" if native else engine.scratch_dir("execgraph-")
    if not native:
        with partitions.scratch_writes(engine):
            pq.write_table(pes, partitions.pes_file(root))
    largest = max((n for _, n in pe_execs), default=1)  # a range holds one PE larger than `chunk`
    engine.run_steps(partitions.range_step, [{"root": root, "i": i, "lo": lo, "hi": hi, "buckets": n_buckets,
                                              "native": native, "pes": pes if native else None, **with_kept}
                                             for i, (lo, hi) in enumerate(ranges)],
                     files=[_range_files(engine.trace, lo, hi) for lo, hi in ranges],
                     step_bytes=None if native else max(chunk, largest) * partitions.RANGE_EXEC_BYTES)
    if native:
        edges = engine.run_steps(partitions.native_graph, [{"table": TABLE, "run_t0": run_t0}], files=[[]])
    else:
        per_bucket = max(1, math.ceil(execs / n_buckets))
        edges = engine.run_steps(partitions.bucket_step, [{"root": root, "b": b, "run_t0": run_t0, **with_kept}
                                                          for b in range(n_buckets)], files=[[] for _ in range(n_buckets)],
                                 step_bytes=per_bucket * partitions.BUCKET_EXEC_BYTES)
    held = kept.graphs if kept is not None else {}
    parts = () if native else tuple(held.get(b, partitions.graph_file(root, b)) for b in range(n_buckets))
    if not native and not held:
        engine.execute(partitions.graph_view_sql(TABLE, list(parts)))
    row = graphread.merged(engine, parts, "events_exec_summary").to_pylist()[0]
    n = int(row["execs"] or 0)
    return ExecGraphInfo(execs=n, t_min=int(row["t_min"] or 0), t_max=int(row["t_max"] or 0),
                         max_pe=int(row["max_pe"] or 0), last_id=row["last_id"], last_t1=row["last_t1"],
                         parts=parts, root=root, pe_first=dict(zip(pes.column("off").to_pylist(),
                                                                   pes.column("pe_t0").to_pylist())),
                         edges=msgedges.merged(edges))


def view(engine: Any, info: ExecGraphInfo) -> str:
    """The engine view TABLE over the whole graph, for queries that read it at once (the report's
    critical segments, the what-if replay): the kept buckets are written to their files first, once."""
    if not any(isinstance(p, pa.Table) for p in info.parts):
        return TABLE
    files = [partitions.graph_file(info.root, b) for b in range(len(info.parts))]
    with partitions.scratch_writes(engine):
        for path, part in zip(files, info.parts):
            if isinstance(part, pa.Table) and not os.path.exists(path):
                partitions.write_whole(path, part)
    engine.execute(partitions.graph_view_sql(TABLE, files))
    return TABLE


def latency_samples(engine: Any, info: ExecGraphInfo) -> dict[str, Any]:
    """The numbers the fit needs (cross_n, any_cross_n, any_cross_q10_ns, cross_q90_ns, kept_n,
    kept_bytes_span, slope_ns_per_byte, intercept_ns, kept_median_ns, local_median_ns,
    busy_gap_median_ns, busy_gap_mean_ns), from the graph's buckets: counts per value
    (events_latency_samples, exact up to EXACT_QUANTILE_MAX_EXECS executions, above rounded to
    graphread.ROUND_BITS significant bits in buckets of more than graphread.EXACT_VALUES_MAX
    distinct values), then the kept deliveries' moments
    (events_latency_kept) under the 90th percentile."""
    bits = 0 if info.execs <= EXACT_QUANTILE_MAX_EXECS else graphread.ROUND_BITS
    counts = graphread.value_counts(graphread.read(engine, info.parts, "events_latency_samples", bits=bits,
                                                   cap=graphread.EXACT_VALUES_MAX))
    empty = (np.zeros(0), np.zeros(0, np.int64), 0)
    any_cross, cross, local, busy = (counts.get(k, empty) for k in ("any_cross", "cross", "local", "busy_gap"))
    cross_n = int(cross[1].sum())
    r: dict[str, Any] = {"cross_n": cross_n, "any_cross_n": int(any_cross[1].sum()),
                         "any_cross_q10_ns": graphread.quantile_cont(any_cross[0], any_cross[1], FEW_SAMPLES_QUANTILE),
                         "cross_q90_ns": graphread.quantile_cont(cross[0], cross[1], LATENCY_FIT_QUANTILE),
                         "local_median_ns": graphread.quantile_cont(local[0], local[1], 0.5),
                         "busy_gap_median_ns": graphread.quantile_cont(busy[0], busy[1], 0.5),
                         "busy_gap_mean_ns": busy[2] / int(busy[1].sum()) if int(busy[1].sum()) else None}
    limit = r["cross_q90_ns"] if cross_n > 4 else math.inf
    kept = cross[0] <= limit
    r["kept_median_ns"] = graphread.quantile_cont(cross[0][kept], cross[1][kept], 0.5)
    rows = graphread.read(engine, info.parts, "events_latency_kept", limit=float(limit)) if cross_n else []
    r.update(graphread.moments([row for t in rows for row in t.to_pylist()]))
    return r


def fit_latency(engine: Any, info: ExecGraphInfo) -> LatencyModel:
    """Fits a + b*bytes on cross-PE send -> exec delays where the receiver was idle at the send
    (latency_samples); with fewer than MIN_FIT_SAMPLES such messages, the latency is the
    FEW_SAMPLES_QUANTILE of all cross-PE delays. Local cost: the median same-PE delay. Quantiles
    are exact up to EXACT_QUANTILE_MAX_EXECS executions, within a relative 2^-graphread.ROUND_BITS
    above (latency_samples)."""
    r = latency_samples(engine, info)
    cross, any_cross = int(r["cross_n"] or 0), int(r["any_cross_n"] or 0)
    a, b = 0.0, 0.0
    if cross < MIN_FIT_SAMPLES and any_cross:
        a = float(r["any_cross_q10_ns"])  # too few idle receivers: the fastest deliveries bound it
    elif cross >= 1:
        if int(r["kept_n"] or 0) >= 3 and (r["kept_bytes_span"] or 0) > 0:
            b, a = float(r["slope_ns_per_byte"]), float(r["intercept_ns"])
            if b < 0 or a < 0:
                a, b = float(r["kept_median_ns"]), 0.0
        else:
            a = float(r["kept_median_ns"])
    local = r["local_median_ns"]
    local_ns = float(local) if local is not None else min(a, 1_000.0)
    return LatencyModel(a_ns=max(a, 0.0), ns_per_byte=max(b, 0.0), local_ns=max(local_ns, 0.0),
                        overhead_ns=max(float(r["busy_gap_median_ns"] or 0.0), 0.0),
                        samples=max(cross, any_cross),
                        overhead_mean_ns=max(float(r["busy_gap_mean_ns"] or 0.0), 0.0))
