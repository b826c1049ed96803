"""Does the format's row order (each PE's rows in time order, docs/trace-format.md) make per-PE work
faster? The same synth charm trace twice: as written (in time order) and with each file's rows
shuffled; on each, side by side, each command in a fresh process:
  * window:   the per-PE window every exact exec graph needs (bench/scale.py's floor, first query:
              each exec's predecessor on its PE, `lag() OVER (PARTITION BY pe ORDER BY t0, t1)`),
  * pe_time:  paradise.engines.busy.pe_time (the busy/idle sweeps per PE: in row order, sorted when a
              trace's rows are not in the format's order), on the DuckDB engine,
  * timeline: the report's timeline window (report_window_execs) over the middle 1 % of the run:
              with rows in time order, row groups outside the window are skipped by their t0/t1
              statistics (both copies have the same row-group size),
  * full:     `paradise analyze --json`,
and prints wall and CPU seconds and the ratios shuffled / ordered.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/row_order.py [--rows 1e7] [--pes 64]
     [--repeat 2] [--dir /tmp/paradise-order]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import FLOOR_SQL, analyze_cmd, generate, run, trace_files  # noqa: E402

from paradise.synth.columns import ROW_GROUP_ROWS  # noqa: E402

CAP = 12 << 30


def shuffled_copy(src: Path, dst: Path, seed: int = 7) -> Path:
    """The trace at src with each file's rows in a random order (schema and metadata kept)."""
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.glob("*.parquet"):
        t = pq.read_table(f)
        pq.write_table(t.take(rng.permutation(t.num_rows)), dst / f.name, compression="zstd",
                       row_group_size=ROW_GROUP_ROWS)
    return dst


def window_cmd(path: Path) -> list[str]:
    code = (f"import duckdb; c = duckdb.connect(); c.execute('SET enable_progress_bar = false'); "
            f"c.execute({FLOOR_SQL[0]!r}, {{'files': {trace_files(path)!r}}}).fetchall()")
    return [sys.executable, "-c", code]


def pe_time_cmd(path: Path) -> list[str]:
    code = ("from paradise.engines.busy import pe_time; from paradise.engines.duckdb_engine import DuckDBEngine; "
            "from paradise.store import open_trace\n"
            f"with DuckDBEngine(open_trace({str(path)!r})) as e: pe_time(e)")
    return [sys.executable, "-c", code]


def span(path: Path) -> tuple[int, int]:
    """The trace's first start and last end, from the files' row-group statistics (no scan)."""
    import pyarrow.parquet as pq

    lo, hi = None, None
    for f in path.glob("*.parquet"):
        md = pq.ParquetFile(f).metadata
        names = md.schema.names
        for g in range(md.num_row_groups):
            t0 = md.row_group(g).column(names.index("t0")).statistics
            t1 = md.row_group(g).column(names.index("t1")).statistics
            lo = t0.min if lo is None else min(lo, t0.min)
            hi = t1.max if hi is None else max(hi, t1.max)
    return int(lo), int(hi)


def timeline_cmd(w0: int, w1: int):
    def make(path: Path) -> list[str]:
        code = ("from paradise.engines.duckdb_engine import DuckDBEngine; from paradise.store import open_trace\n"
                f"with DuckDBEngine(open_trace({str(path)!r})) as e: "
                f"e.query('report_window_execs', w0={w0}, w1={w1}, max_rows=200_000)")
        return [sys.executable, "-c", code]
    return make


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1e7")
    ap.add_argument("--pes", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=2, help="runs of each command on each trace (the least is kept)")
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "paradise-order")
    args = ap.parse_args()
    rows = int(float(args.rows))
    args.dir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start; "
          f"synth charm {rows:.0e} rows, {args.pes} PEs", flush=True)
    try:
        ordered = generate("charm", rows, args.pes, args.dir)
        shuffled = shuffled_copy(ordered, args.dir / "shuffled")
        print(f"{'command':8s} {'ordered wall/CPU s':>20s} {'shuffled wall/CPU s':>21s}  shuffled/ordered CPU")
        lo, hi = span(ordered)
        mid, width = (lo + hi) // 2, max((hi - lo) // 200, 1)
        commands = (("window", window_cmd), ("pe_time", pe_time_cmd),
                    ("timeline", timeline_cmd(mid - width, mid + width)), ("full", analyze_cmd))
        for label, make in commands:
            best = {}
            for name, path in (("ordered", ordered), ("shuffled", shuffled)):
                runs = [run(make(path), CAP) for _ in range(args.repeat)]  # alternating would interleave caches
                bad = [r.err for r in runs if r.err or r.killed]
                if bad:
                    raise SystemExit(f"{label} on {name}: {bad[0] or 'killed'}")
                best[name] = min(runs, key=lambda r: r.cpu_s)
            o, s = best["ordered"], best["shuffled"]
            print(f"{label:8s} {o.wall_s:9.1f} {o.cpu_s:9.1f}  {s.wall_s:9.1f} {s.cpu_s:9.1f}  "
                  f"{s.cpu_s / max(o.cpu_s, 1e-9):8.2f}x", flush=True)
    finally:
        shutil.rmtree(args.dir, ignore_errors=True)
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
