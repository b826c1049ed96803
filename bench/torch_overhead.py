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


def run_once(mode: str, nproc: int, steps: int, work: Path, extra: list[str]) -> float:
    """Training-loop ns per step on rank 0 for one torchrun run in the given mode."""
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
    m = re.search(r"train_loop_ns=(\d+) steps=(\d+)", proc.stdout)
    if not m:
        raise SystemExit(f"{mode}: no train_loop_ns line in the output:\n{proc.stdout[-1000:]}")
    shutil.rmtree(out, ignore_errors=True)
    return int(m.group(1)) / int(m.group(2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("train_args", nargs="*", help="extra ddp_train.py arguments (after --)")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="torch-overhead-"))
    per_step: dict[str, list[float]] = {m: [] for m in MODES}
    try:
        for rep in range(args.reps):
            for mode in MODES:
                per_step[mode].append(run_once(mode, args.nproc, args.steps, work, args.train_args))
            print(f"rep {rep + 1}/{args.reps}: " + "  ".join(f"{m} {per_step[m][-1] / 1e6:.2f} ms/step" for m in MODES),
                  flush=True)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {m: statistics.median(v) for m, v in per_step.items()}
    print(f"\nddp_train.py, {args.nproc} ranks (gloo), {args.steps} steps, {args.reps} interleaved repetitions; "
          f"median training-loop time per step (rank 0):")  # fmt: skip
    for m in MODES:
        lo, hi = min(per_step[m]), max(per_step[m])
        print(f"  {m:9s} {med[m] / 1e6:8.2f} ms/step   (min {lo / 1e6:.2f}, max {hi / 1e6:.2f})")
    # Ratio of medians, and the median of per-repetition ratios (pairs run back to back).
    for m in ("paradise", "profiler"):
        pairs = statistics.median(a / b for a, b in zip(per_step[m], per_step["untraced"]))
        print(f"  {m}/untraced: {med[m] / med['untraced']:.3f} (median of paired ratios {pairs:.3f})")
    pairs = statistics.median(a / b for a, b in zip(per_step["paradise"], per_step["profiler"]))
    print(f"  paradise/profiler: {med['paradise'] / med['profiler']:.3f} (median of paired ratios {pairs:.3f})")


if __name__ == "__main__":
    main()
