"""Cost of the charm4py tracer: each program traced and untraced, side by side, on 1 and 2 PEs.

    .venv/bin/python bench/charm_overhead.py [--reps 3] [--pes 1 2] [--only stencil2d ...]

For every (program, PEs) it runs REPS untraced/traced pairs (interleaved, so a busy machine
hurts both alike) and prints the median times, their ratio, and the tracer's cost per
message = (traced - untraced) / messages, messages = `send` rows in the traced run's trace.
Two times are compared: the program's own `elapsed_s=` from its RESULT line when it prints
one (the measured region, without interpreter start-up and the final trace compaction),
and the whole charmrun wall time.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracers.charm.launch import launch  # noqa: E402

PROGRAMS: dict[str, tuple[str, list[str]]] = {
    # name: (path, args) sized to run a few seconds each on a small machine
    "pingpong": ("tests/charm_programs/pingpong.py", ["10000"]),
    "histsort": ("examples/histsort.py", []),
    "stencil2d": ("examples/stencil2d.py", ["--grid", "8", "8", "--block", "128", "--iters", "40"]),
    "masterworker": ("examples/masterworker.py", []),
    "wavefront": ("examples/wavefront.py", []),
}
RUN_TIMEOUT_S = 300
ELAPSED_RE = re.compile(r"elapsed_s=([0-9.eE+-]+)")


def _one(path: Path, args: list[str], pes: int, trace_dir: Path | None) -> tuple[float, float | None]:
    res = launch(path, args, pes, trace_dir=trace_dir, capture=True, timeout_s=RUN_TIMEOUT_S)
    if res.returncode != 0 or "RESULT ok" not in (res.stdout or ""):
        raise RuntimeError(f"{path.name} +p{pes} {'traced' if trace_dir else 'untraced'} failed "
                           f"({res.returncode}): {(res.stderr or '')[-500:]}")
    m = ELAPSED_RE.search(res.stdout.split("RESULT ok", 1)[1])
    return res.wall_s, float(m.group(1)) if m else None


def _messages(trace_dir: Path) -> int:
    con = duckdb.connect()
    n = con.sql(f"SELECT count(*) FROM read_parquet('{trace_dir}/*.parquet') WHERE kind = 'send'").fetchall()[0][0]
    con.close()
    return int(n)


def bench(name: str, path: Path, args: list[str], pes: int, reps: int) -> dict:
    plain_wall, plain_prog, traced_wall, traced_prog, msgs = [], [], [], [], 0
    tmp = Path(tempfile.mkdtemp(prefix="paradise-bench-"))
    try:
        for r in range(reps):
            w, p = _one(path, args, pes, None)
            plain_wall.append(w)
            plain_prog.append(p)
            out = tmp / f"t{r}"
            w, p = _one(path, args, pes, out)
            traced_wall.append(w)
            traced_prog.append(p)
            msgs = _messages(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    row = {"program": name, "pes": pes, "messages": msgs}
    for label, plain, traced in (("prog", plain_prog, traced_prog), ("wall", plain_wall, traced_wall)):
        if None in plain or None in traced:
            continue
        a, b = statistics.median(plain), statistics.median(traced)
        row[label] = (a, b, b / a, (b - a) / msgs * 1e6 if msgs else float("nan"))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--only", nargs="+", default=None, help="program names (default: all that exist)")
    a = ap.parse_args(argv)
    names = a.only or list(PROGRAMS)
    import os

    print(f"charm4py tracer overhead: median of {a.reps} untraced/traced pairs per row")
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")
    print(f"{'program':<13}{'PEs':>4}{'messages':>10}  {'time':<5}{'untraced s':>11}{'traced s':>10}"
          f"{'ratio':>7}{'us/msg':>8}")
    for name in names:
        rel, args = PROGRAMS[name]
        path = ROOT / rel
        if not path.exists():
            print(f"{name:<13}  (skipped: {rel} not found)")
            continue
        for pes in a.pes:
            try:
                row = bench(name, path, args, pes, a.reps)
            except RuntimeError as exc:  # a hung or failed run (either side) is reported, not fatal
                print(f"{name:<13}{pes:>4}  (skipped: {exc})")
                continue
            for label in ("prog", "wall"):
                if label in row:
                    plain, traced, ratio, per_msg = row[label]
                    print(f"{name:<13}{pes:>4}{row['messages']:>10}  {label:<5}{plain:>11.3f}{traced:>10.3f}"
                          f"{ratio:>7.2f}{per_msg:>8.1f}")
            sys.stdout.flush()
    print("prog: the program's own elapsed_s (measured region); wall: whole charmrun run incl. start-up and "
          "trace compaction. us/msg = (traced - untraced) / send rows.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
