"""How much slower is `paradise analyze` (overview) than a bare DuckDB scan of the same files?

Generates a Charm-like synthetic trace of at least 10 million rows (cached under .bench/,
gitignored), then times, side by side and several times each:
  * scan:      one DuckDB query reading every column the overview uses (count and sums),
  * analyze:   the overview analysis in-process (DuckDB engine, stage 1 + stage 2); this
               Charm-like trace takes busy as the sum of exec time (no sort),
  * union:     the same, forcing busy as the union of intervals (the rule for torch/Kineto
               traces: one window sort of the exec rows),
  * cli:       with --cli, `paradise analyze --json` as a subprocess: interpreter start-up and
               every analysis in ANALYSES, not only the overview,
and prints the medians and the ratios (goal: analyze / scan <= 3).

Run: .venv/bin/python bench/analyze_vs_scan.py [--rows N] [--pes P] [--reps R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradise.format import SCHEMA, make_metadata  # noqa: E402

BENCH_DIR = ROOT / ".bench"
ENTRY_NAMES = [f"Cell.entry{i}" for i in range(24)]
COLLS = ["Cell#0", "Reducer#1", "Main#2"]

SCAN_SQL = """
SELECT count(*), sum(t1 - t0), min(t0), max(coalesce(t1, t0)), sum(active), count(DISTINCT pe),
       count(DISTINCT kind), count(DISTINCT name), count(DISTINCT coll), count(DISTINCT cat),
       sum(peer_pe), sum(bytes)
FROM events
"""
"""One pass over every column the overview queries read: the floor any analysis pays."""


def _pe_table(pe: int, pes: int, rows: int, rng: np.random.Generator) -> pa.Table:
    """Rows of one PE: execs separated by idles, each exec sending ~1.5 messages (vectorised)."""
    n_exec = rows * 2 // 7  # per exec: 1 exec + 1 idle + ~1.5 sends = 3.5 rows
    dur = rng.integers(2_000, 200_000, n_exec)
    gap = rng.integers(0, 50_000, n_exec)
    t0 = np.cumsum(np.concatenate([[0], (dur + gap)[:-1]])) + rng.integers(0, 1000)
    t1 = t0 + dur
    idle_t0 = t1
    idle_t1 = t1 + gap
    n_send = rows - 2 * n_exec
    src = rng.integers(0, n_exec, n_send)
    send_t = t0[src] + (dur[src] * rng.random(n_send)).astype(np.int64)
    msg_base = pe * 10_000_000_000

    def col(a, typ):
        return pa.array(a, type=typ)

    kinds = np.concatenate([np.zeros(n_exec, np.int32), np.ones(n_exec, np.int32), np.full(n_send, 2, np.int32)])
    names = rng.integers(0, len(ENTRY_NAMES), 2 * n_exec + n_send).astype(np.int32)
    colls = rng.integers(0, len(COLLS), 2 * n_exec + n_send).astype(np.int32)
    idle_mask = np.concatenate([np.zeros(n_exec, bool), np.ones(n_exec, bool), np.zeros(n_send, bool)])
    name = pa.DictionaryArray.from_arrays(pa.array(names, mask=idle_mask), pa.array(ENTRY_NAMES))
    coll = pa.DictionaryArray.from_arrays(pa.array(colls, mask=idle_mask), pa.array(COLLS))
    n = 2 * n_exec + n_send
    peer = np.concatenate([np.zeros(2 * n_exec, np.int32), rng.integers(0, pes, n_send).astype(np.int32)])
    peer_mask = np.concatenate([np.ones(2 * n_exec, bool), np.zeros(n_send, bool)])
    nbytes = np.concatenate([np.zeros(2 * n_exec, np.int64), rng.integers(8, 65_536, n_send)])
    msg = np.concatenate([msg_base + np.arange(n_exec), np.zeros(n_exec, np.int64), msg_base + 5_000_000_000 + np.arange(n_send)])
    msg_mask = np.concatenate([np.zeros(n_exec, bool), np.ones(n_exec, bool), np.zeros(n_send, bool)])
    t0_all = np.concatenate([t0, idle_t0, send_t])
    t1_all = np.concatenate([t1, idle_t1, send_t])
    t1_mask = np.concatenate([np.zeros(2 * n_exec, bool), np.ones(n_send, bool)])
    order = np.argsort(t0_all, kind="stable")
    arrays = {
        "kind": pa.DictionaryArray.from_arrays(pa.array(kinds), pa.array(["exec", "idle", "send"])),
        "pe": col(np.full(n, pe, np.int32), pa.int32()),
        "t0": col(t0_all, pa.int64()),
        "t1": pa.array(t1_all, mask=t1_mask, type=pa.int64()),
        "name": name,
        "coll": coll,
        "obj": col(rng.integers(0, 64, n), pa.int64()),
        "msg": pa.array(msg, mask=msg_mask, type=pa.int64()),
        "peer_pe": pa.array(peer, mask=peer_mask, type=pa.int32()),
        "bytes": pa.array(nbytes, mask=peer_mask, type=pa.int64()),
    }
    cols = []
    for field in SCHEMA:
        if field.name in arrays:
            cols.append(arrays[field.name].take(pa.array(order)).cast(field.type))
        else:
            cols.append(pa.nulls(n, field.type))
    meta = make_metadata(source="synthetic", program="bench", pes=pes, pe=pe, complete=True)
    return pa.Table.from_arrays(cols, schema=SCHEMA.with_metadata(meta))


def generate(rows: int, pes: int) -> Path:
    """The cached bench trace directory for (rows, pes), generated once."""
    out = BENCH_DIR / f"analyze-{rows}-{pes}"
    done = out / ".done"
    if done.exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    for pe in range(pes):
        table = _pe_table(pe, pes, -(-rows // pes), rng)
        pq.write_table(table, out / f"pe-{pe:05d}.parquet", compression="zstd", row_group_size=122_880)
    done.write_text("ok\n")
    return out


def _time(fn, reps: int) -> list[float]:
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--pes", type=int, default=64)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cli", action="store_true", help="also time the whole CLI (every analysis, not only overview)")
    args = ap.parse_args()

    from paradise.analyses import overview
    from paradise.analyses.base import AnalysisConfig
    from paradise.engines.duckdb_engine import DuckDBEngine
    from paradise.store import open_trace

    path = generate(args.rows, args.pes)
    trace = open_trace(path)
    import duckdb

    print(f"trace: {path.relative_to(ROOT)}  files={len(trace.files)}  rows={trace.num_rows:,}")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; duckdb {duckdb.__version__}")

    def scan() -> None:
        with DuckDBEngine(trace) as eng:
            eng.sql(SCAN_SQL)

    def analyze() -> None:
        with DuckDBEngine(trace) as eng:
            overview.analyze(eng, trace, AnalysisConfig())

    def analyze_union() -> None:
        with DuckDBEngine(trace) as eng:
            overview.analyze(eng, trace, AnalysisConfig(options={"busy": "union"}))

    def cli() -> None:
        subprocess.run(
            [str(Path(sys.executable).parent / "paradise"), "analyze", "--json", str(path)],
            check=True,
            capture_output=True,
        )

    runs = {"scan": scan, "overview analyze (in-process)": analyze, "overview, busy as union (torch rule)": analyze_union}
    if args.cli:
        runs["paradise analyze --json (CLI)"] = cli
    scan()  # warm the OS file cache once so neither side pays cold reads
    results: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(args.reps):  # interleaved, so load from other processes hits every variant alike
        for label, fn in runs.items():
            results[label] += _time(fn, 1)
    base = statistics.median(results["scan"])
    print(f"repetitions: {args.reps} (median, min, max in seconds)")
    for label, times in results.items():
        med = statistics.median(times)
        print(f"  {label:36s} {med:7.3f}  {min(times):7.3f}  {max(times):7.3f}   ratio {med / base:5.2f}x")
    ratio = statistics.median(results["overview analyze (in-process)"]) / base
    print(f"overview analyze / scan = {ratio:.2f}x (goal <= 3x): {'met' if ratio <= 3 else 'NOT met'}")


if __name__ == "__main__":
    main()
