"""How long does `paradise report` take next to `paradise analyze --json` on the same trace, and
how large is the page?

Uses the synthetic Charm-style trace of bench/analyze_vs_scan.py (a 2-D grid of objects with
ghost messages; generated once and cached). Runs, interleaved and `--reps` times each, as fresh
processes:
  * analyze:  `paradise analyze --json TRACE` (every analysis that applies),
  * report:   `paradise report TRACE -o page.html --force` (the same analyses on one engine,
              plus the report's binning and timeline queries, the critical path inside the window
              and the page),
and prints the medians (wall and CPU seconds of the process and its threads), the ratio report /
analyze (goal: at most 1.5) and the page's size (goal: under 10 MB).

The size law: the page holds plotly.js (fixed), PEs x bins utilization cells, keys x bins profile
cells, at most MAX_TIMELINE_EXECS bars and capped tables, none of which grows with the rows.
`--law-rows` builds the page of smaller traces of the same program to show it.

`--export` also times `paradise export chrome` (.json.gz) at each size and prints its peak memory:
the export streams Arrow batches, so peak memory stays flat while the output grows with the rows.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/report_speed.py [--rows N]
     [--pes P] [--reps R (0: sizes and export only)] [--law-rows 100000,1000000] [--export] [--dir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import analyze_vs_scan as avs  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

PARADISE = str(Path(sys.executable).parent / "paradise")


def _fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):7.2f}"


def page_size(trace: Path, out: Path) -> tuple[float, float, int]:
    """(seconds, MiB peak RSS, bytes) of one `paradise report` run."""
    dt, _, rss, _ = avs.run_child([PARADISE, "report", str(trace), "-o", str(out), "--force"])
    return dt, rss, out.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--pes", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--law-rows", default="100000,1000000", help="smaller traces for the size law (comma-separated)")
    ap.add_argument("--export", action="store_true", help="also time `paradise export chrome` at each size")
    ap.add_argument("--dir", type=Path, default=avs.BENCH_DIR, help="where generated traces are cached")
    args = ap.parse_args()
    avs.BENCH_DIR = args.dir
    trace = avs.generate(args.rows, args.pes)
    out_dir = Path(tempfile.mkdtemp(prefix="report-speed-"))
    page = out_dir / "page.html"
    runs: dict[str, list[tuple[float, float, float]]] = {"analyze": [], "report": []}
    for _ in range(args.reps):
        dt, cpu, rss, _ = avs.run_child(avs.analyze_cmd(trace))
        runs["analyze"].append((dt, cpu, rss))
        dt, cpu, rss, _ = avs.run_child([PARADISE, "report", str(trace), "-o", str(page), "--force"])
        runs["report"].append((dt, cpu, rss))
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in sorted(trace.glob("*.parquet")))
    print(f"trace: {rows:,} rows on {args.pes} PEs ({trace.name}); medians of {args.reps} runs, fresh processes")
    if not args.reps:  # --reps 0: only the page sizes (and the export)
        page_size(trace, page)
        runs = {}
    if runs:
        print(f"{'':10} {'wall s':>7} {'CPU s':>7} {'max RSS MiB':>12}")
        for name, xs in runs.items():
            print(f"{name:10} {_fmt([x[0] for x in xs])} {_fmt([x[1] for x in xs])} "
                  f"{statistics.median(x[2] for x in xs):12.0f}")
        wall = statistics.median(x[0] for x in runs["report"]) / statistics.median(x[0] for x in runs["analyze"])
        cpu = statistics.median(x[1] for x in runs["report"]) / statistics.median(x[1] for x in runs["analyze"])
        print(f"report / analyze: wall {wall:.2f}x, CPU {cpu:.2f}x (goal: at most 1.5x)")
    sizes = [(rows, page.stat().st_size)]
    for n in [int(x) for x in args.law_rows.split(",") if x]:
        t = avs.generate(n, args.pes)
        _, _, size = page_size(t, out_dir / f"page-{n}.html")
        sizes.append((n, size))
    print("page size by trace rows (same program and PEs):")
    for n, size in sorted(sizes):
        print(f"  {n:>12,} rows  {size / 1e6:6.2f} MB")
    if args.export:
        print("export chrome (.json.gz) by trace rows:")
        for n, _ in sorted(sizes):
            t = trace if n == rows else avs.generate(n, args.pes)
            dst = out_dir / f"t-{n}.json.gz"
            dt, cpu_s, rss, _ = avs.run_child([PARADISE, "export", "chrome", str(t), "-o", str(dst), "--force"])
            print(f"  {n:>12,} rows  wall {dt:7.2f} s  CPU {cpu_s:7.2f} s  max RSS {rss:6.0f} MiB  "
                  f"output {dst.stat().st_size / 1e6:8.1f} MB")
            dst.unlink()
    for p in out_dir.iterdir():
        p.unlink()
    out_dir.rmdir()


if __name__ == "__main__":
    main()
