"""What does putting a PE's rows in time order cost at close? TraceWriter.close() (tests/trace_writer.py) on rows
appended as a tracer appends them (an execution when it ends, after the sends it made), side by
side: this tree and a baseline source tree (`--baseline-src`, e.g. an export of main), each in a
fresh process, for wall and CPU seconds of close() and the process' peak RSS.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/writer_close.py
     --baseline-src /tmp/main-src [--rows 2e6] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, os, resource, sys, tempfile, time
try:
    from tests.trace_writer import TraceWriter
except ImportError:  # a baseline tree from before the writer moved out of tracers/
    from tracers.writer import TraceWriter
rows, sends = int(sys.argv[1]), 4
with tempfile.TemporaryDirectory() as d:
    w = TraceWriter(d, 0, source="synthetic", program="bench", pes=1)
    t, n, msg = 0, 0, 0
    while n < rows:  # an exec of 10 us that sends 4 messages: its row comes after theirs
        for k in range(sends):
            w.append(("send", 0, t + 2_000 * (k + 1), None, None, 0, None, "C#0", 1, "[1]", "e", msg, 1))
            msg += 1
        w.append(("exec", 0, t, t + 10_000, 10_000, 0, None, "C#0", 1, "[1]", "e", None))
        t, n = t + 11_000, n + sends + 1
    c0, t0 = time.process_time(), time.perf_counter()
    w.close()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    size = os.path.getsize(os.path.join(d, "pe-00000.parquet"))
print(json.dumps({"rows": n, "close_wall_s": wall, "close_cpu_s": cpu, "bytes": size,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def one(src: Path, rows: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src))
    with tempfile.TemporaryDirectory() as cwd:  # not the repo: PYTHONPATH decides which tree runs
        out = subprocess.run([sys.executable, "-c", CHILD, str(rows)], env=env, cwd=cwd, capture_output=True,
                             text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-src", type=Path, required=True, help="source tree to compare with")
    ap.add_argument("--rows", default="2e6")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    rows = int(float(args.rows))
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; {rows:,} rows, one PE")
    best: dict[str, dict] = {}
    for _ in range(args.repeat):
        for name, src in (("baseline", args.baseline_src), ("this tree", ROOT)):
            r = one(src, rows)
            if name not in best or r["close_cpu_s"] < best[name]["close_cpu_s"]:
                best[name] = r
    for name, r in best.items():
        print(f"  {name:10s} close: {r['close_wall_s']:6.2f} s wall, {r['close_cpu_s']:6.2f} s CPU; "
              f"peak RSS {r['peak_rss_mib']:,.0f} MiB; file {r['bytes'] / 2**20:,.1f} MiB ({r['rows']:,} rows)")
    b, t = best["baseline"], best["this tree"]
    print(f"  close CPU this tree / baseline: {t['close_cpu_s'] / max(b['close_cpu_s'], 1e-9):.2f}x; "
          f"peak RSS {t['peak_rss_mib'] / max(b['peak_rss_mib'], 1e-9):.2f}x")
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
