"""Overhead of `paradise trace torch` on examples/ddp_train.py, side by side with torch.profiler.

Three modes run interleaved (A B C, A B C, ...) so machine load drifts hit all alike:
untraced (torchrun on the script), paradise (the tracer's bootstrap with PARADISE_TRACE set, as
`paradise trace torch` runs it), profiler (the same bootstrap running torch.profiler alone, CPU
activities, step markers). The measure is the script's own training-loop time (rank 0,
`--timing`), so process start and imports do not dilute the ratios.

    .venv/bin/python bench/torch_overhead.py [--reps 5] [--steps 60] [--nproc 2]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "examples" / "ddp_train.py"
MODES = ("untraced", "paradise", "profiler")


def run_once(mode: str, nproc: int, steps: int, work: Path, extra: list[str]) -> tuple[float, float]:
    """(wall, CPU) training-loop ns per step on rank 0 for one torchrun run in the given mode."""
    env = dict(os.environ, TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1")
    for k in ("PARADISE_TRACE", "PARADISE_TRACE_PROFILER", "PARADISE_TRACE_PROFILER_DIR"):
        env.pop(k, None)
    target = [str(TRAIN)]
    if mode != "untraced":
        target = ["-m", "tracers.torch.run", str(TRAIN)]
    out = work / f"{mode}-{time.monotonic_ns()}"
    if mode == "paradise":
        env.update(PARADISE_TRACE=str(out), PARADISE_TRACE_ORIGIN_NS=str(time.time_ns()))
    elif mode == "profiler":
        env.update(PARADISE_TRACE_PROFILER="1", PARADISE_TRACE_PROFILER_DIR=str(out))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
           *target, "--steps", str(steps), "--timing", *extra]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    m = re.search(r"train_loop_ns=(\d+) train_loop_cpu_ns=(\d+) steps=(\d+)", proc.stdout)
    if not m:
        raise SystemExit(f"{mode}: no train_loop_ns line in the output:\n{proc.stdout[-1000:]}")
    shutil.rmtree(out, ignore_errors=True)
    n = int(m.group(3))
    return int(m.group(1)) / n, int(m.group(2)) / n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("train_args", nargs="*", help="extra ddp_train.py arguments (after --)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="torch-overhead-"))
    wall: dict[str, list[float]] = {m: [] for m in MODES}
    cpu: dict[str, list[float]] = {m: [] for m in MODES}
    try:
        for rep in range(args.reps):
            for mode in MODES:
                w, c = run_once(mode, args.nproc, args.steps, work, args.train_args)
                wall[mode].append(w)
                cpu[mode].append(c)
            line = "  ".join(f"{m} {wall[m][-1] / 1e6:.2f} ms ({cpu[m][-1] / 1e6:.2f} ms CPU)" for m in MODES)
            print(f"rep {rep + 1}/{args.reps} per step: {line}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    backend = "nccl" if "nccl" in args.train_args else "gloo"
    print(
        f"\nddp_train.py {' '.join(args.train_args)}, {args.nproc} ranks ({backend}), {args.steps} steps, "
        f"{args.reps} interleaved repetitions; training-loop time per step on rank 0 "
        "(wall, and CPU time of the rank's process: less sensitive to other load on the machine):"
    )
    for label, data in (("wall", wall), ("CPU", cpu)):
        med = {m: statistics.median(v) for m, v in data.items()}
        for m in MODES:
            print(f"  {label:4s} {m:9s} median {med[m] / 1e6:8.2f} ms/step  "
                  f"(min {min(data[m]) / 1e6:.2f}, max {max(data[m]) / 1e6:.2f})")  # fmt: skip
        # Ratio of medians, and the median of per-repetition ratios (runs back to back).
        for a, b in (("paradise", "untraced"), ("profiler", "untraced"), ("paradise", "profiler")):
            pairs = statistics.median(x / y for x, y in zip(data[a], data[b]))
            print(f"  {label:4s} {a}/{b}: {med[a] / med[b]:.3f} (median of paired ratios {pairs:.3f})")


if __name__ == "__main__":
    main()
