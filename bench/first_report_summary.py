"""The first report (`paradise analyze --json --only overview`) on trace files that carry their summary
in the footer (paradise.format.summary) and on the same files without it, beside bench/scale.py's
scan, each a process of its own (bench/scale.py's `run`: CPU from wait4, peak RSS), in alternating
rounds; prints the medians and their ratios to the scan's CPU, and checks that both reports are
equal but for the trace's path and fingerprint (which counts the files' sizes).

The summary-less copy is made once under --dir: each file's rows rewritten with the format's writer
options and row groups and no summary (its rows checked equal to the original's).

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/first_report_summary.py TRACE_DIR
     [--rounds 5] [--dir /tmp/paradise-summary] [--memory-limit 2GiB]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pyarrow.parquet as pq  # noqa: E402
import scale  # noqa: E402
from scale import analyze_cmd, run, scan_cmd  # noqa: E402

from paradise.format import WRITE_OPTIONS  # noqa: E402
from paradise.format.summary import KEY  # noqa: E402
from paradise.memory import parse_size  # noqa: E402


def strip_copy(src: Path, dst: Path) -> None:
    """`src`'s files without their summaries, row group for row group; other files copied as they are."""
    dst.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.iterdir()):
        if f.suffix != ".parquet":
            if f.is_file():
                (dst / f.name).write_bytes(f.read_bytes())
            continue
        pf = pq.ParquetFile(f)
        if KEY not in (pf.metadata.metadata or {}):
            sys.exit(f"{f}: carries no summary; generate the trace with this tree's `paradise synth`")
        with pq.ParquetWriter(dst / f.name, pf.schema_arrow, **WRITE_OPTIONS) as w:
            for i in range(pf.num_row_groups):
                w.write_table(pf.read_row_group(i))
        out = pq.ParquetFile(dst / f.name)
        assert KEY not in (out.metadata.metadata or {})
        assert out.metadata.num_rows == pf.metadata.num_rows and out.num_row_groups == pf.num_row_groups
        assert out.read().equals(pf.read()), f"{f}: the copy's rows differ"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/paradise-summary"))
    ap.add_argument("--memory-limit", help="each analyze's --memory-limit (default: the default budget)")
    args = ap.parse_args()
    if args.memory_limit:
        scale.MEMORY_LIMIT[:] = ["--memory-limit", args.memory_limit]
    plain = args.dir / (args.trace.name + "-no-summary")
    if not plain.exists():
        strip_copy(args.trace, plain)
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in args.trace.glob("*.parquet"))
    print(f"{args.trace}: {rows:,} rows; copy without summaries: {plain}; {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.1f}")
    cap = parse_size("12GiB")
    designs = {"scan": scan_cmd(args.trace), "first, summaries": analyze_cmd(args.trace, "--only", "overview"),
               "first, rows": analyze_cmd(plain, "--only", "overview")}
    cpu: dict[str, list[float]] = {k: [] for k in designs}
    docs: dict[str, dict] = {}
    for i in range(args.rounds):
        order = list(designs) if i % 2 == 0 else [list(designs)[0]] + list(designs)[:0:-1]
        for label in order:
            r = run(designs[label], cap, label)
            if r.err or r.killed:
                sys.exit(f"{label}: {r.err or 'killed'}")
            cpu[label].append(r.cpu_s)
            print(f"  round {i + 1}  {label:18s} CPU {r.cpu_s:6.2f} s  wall {r.wall_s:6.2f} s  "
                  f"peak RSS {r.rss_mib:6,.0f} MiB", flush=True)
            if label != "scan":
                doc = json.loads(r.out)
                for key in ("path", "fingerprint"):  # the fingerprint counts the files' sizes
                    doc["trace"].pop(key)
                docs[label] = doc
    same = docs["first, summaries"] == docs["first, rows"]
    if not same:
        a, b = docs["first, summaries"], docs["first, rows"]
        print("keys that differ:", [k for k in set(a) | set(b) if a.get(k) != b.get(k)])
    scan = statistics.median(cpu["scan"])
    print("median CPU s: " + ", ".join(
        f"{k} {statistics.median(v):.2f} ({statistics.median(v) / scan:.2f}x the scan)" for k, v in cpu.items()))
    print(f"reports: {'equal' if same else 'DIFFER'} (but for the path and fingerprint); load at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
