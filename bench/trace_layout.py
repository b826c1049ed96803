"""What does the trace files' Parquet layout cost every reader? The same trace in two layouts, side by side.

The trace at TRACE is written again, row group by row group and with its metadata, in each layout:
  * zstd:   every column zstd, the low-cardinality strings dictionary-encoded (paradise's writers
            before the format's WRITE_OPTIONS),
  * format: paradise.format.WRITE_OPTIONS (t0, t1, exec_t0, msg DELTA_BINARY_PACKED and
            uncompressed, the rest as above).
Each rewrite's CPU is timed (what a writer pays: the spool conversion, an import, synth), then the
readers run in fresh processes, layouts alternating within each round: `scan` (bench/scale.py's one
pass over every column an analysis reads), `first` (`paradise analyze --json --only overview`) and
`full` (`paradise analyze --json`, default budget). CPU seconds are the child's (user + system,
every thread), wall beside them; each command's --json must be the same in both layouts.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/trace_layout.py TRACE [--rounds 2]
     [--commands scan,first,full] [--dir SCRATCH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pyarrow.parquet as pq  # noqa: E402
import scale  # noqa: E402

from paradise.format import LOW_CARDINALITY_STRINGS, WRITE_OPTIONS  # noqa: E402

LAYOUTS = {
    "zstd": {"compression": "zstd", "use_dictionary": LOW_CARDINALITY_STRINGS},
    "format": WRITE_OPTIONS,
}
PAPER = ("trace", "path", "elapsed_s", "files")
"""--json fields that name the input or time the run: left out of the comparison."""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rewrite(src: Path, dst: Path, options: dict) -> tuple[float, int]:
    """`src`'s files written again into `dst` with `options`, row group by row group (the other files
    copied); returns (CPU seconds of the reads and writes, bytes written)."""
    dst.mkdir(parents=True)
    cpu, size = _cpu(), 0
    for f in sorted(src.iterdir()):
        out = dst / f.name
        if f.suffix != ".parquet":
            shutil.copy(f, out)
            continue
        pf = pq.ParquetFile(f)
        with pq.ParquetWriter(out, pf.schema_arrow, **options) as w:
            for i in range(pf.num_row_groups):
                w.write_table(pf.read_row_group(i), row_group_size=1 << 30)
        size += out.stat().st_size
    return _cpu() - cpu, size


def command(name: str, trace: Path) -> list[str]:
    if name == "scan":
        return scale.scan_cmd(trace)
    paradise = str(Path(sys.executable).parent / "paradise")
    return [paradise, "analyze", str(trace), "--json"] + (["--only", "overview"] if name == "first" else [])


def run(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, the child's CPU s, its stdout)."""
    before, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)}: exit {proc.returncode}\n{proc.stderr}")
    return (time.perf_counter() - t, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc.stdout)


def _paper_free(x: object) -> object:
    if isinstance(x, dict):
        return {k: _paper_free(v) for k, v in x.items() if k not in PAPER}
    if isinstance(x, list):
        return [_paper_free(v) for v in x]
    return x


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", type=Path)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--commands", default="scan,first,full")
    p.add_argument("--dir", type=Path, default=None, help="where the rewritten traces go (default: beside TRACE)")
    args = p.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="trace-layout-", dir=args.dir or args.trace.parent))
    print(f"{args.trace}: {sum(pq.ParquetFile(f).metadata.num_rows for f in args.trace.glob('*.parquet')):,} rows; "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
    try:
        traces = {}
        for name, options in LAYOUTS.items():
            traces[name] = scratch / name
            cpu, size = rewrite(args.trace, traces[name], options)
            print(f"  write {name:7s} CPU {cpu:6.2f} s   {size / 2**20:8,.0f} MiB", flush=True)
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        outputs: dict[tuple[str, str], object] = {}
        for r in range(args.rounds):
            for cmd in args.commands.split(","):
                order = list(LAYOUTS) if r % 2 == 0 else list(reversed(LAYOUTS))
                for name in order:
                    wall, cpu, out = run(command(cmd, traces[name]))
                    times.setdefault((cmd, name), []).append((wall, cpu))
                    if cmd != "scan":
                        outputs[(cmd, name)] = _paper_free(json.loads(out))
                    print(f"  round {r + 1}  {cmd:5s} {name:7s} wall {wall:7.2f} s  CPU {cpu:7.2f} s", flush=True)
        print("medians over the rounds (format / zstd):")
        for cmd in args.commands.split(","):
            med = {n: [statistics.median(v[i] for v in times[(cmd, n)]) for i in (0, 1)] for n in LAYOUTS}
            same = "" if cmd == "scan" else ("   --json: same" if outputs[(cmd, "zstd")] == outputs[(cmd, "format")]
                                             else "   --json: DIFFERENT")
            print(f"  {cmd:5s} wall {med['zstd'][0]:7.2f} -> {med['format'][0]:7.2f} s ({med['format'][0] / med['zstd'][0]:.2f}x)"
                  f"   CPU {med['zstd'][1]:7.2f} -> {med['format'][1]:7.2f} s ({med['format'][1] / med['zstd'][1]:.2f}x){same}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
