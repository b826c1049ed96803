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


CHILD_STEPS = 200
CHILD_BLOCKS = 5


def child(mode: str, train_args: list[str]) -> None:
    """One process, world size 1 (gloo): CPU ns per step of ddp_train's train_step, min over blocks.

    No peers and no torchrun, so nothing but this process's own work is timed: the cost the
    tracer (or the profiler) adds to each step, with far less noise than a loaded machine's wall
    clock gives a 2-rank run."""
    import statistics as st

    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(20000 + os.getpid() % 20000), RANK="0", WORLD_SIZE="1"
    )
    import torch
    import torch.distributed as dist

    tracer = prof = None
    if mode == "paradise":
        import tracers.torch as api
        from tracers.torch import hooks
        from tracers.torch.tracer import Tracer

        tracer = Tracer(tempfile.mkdtemp(prefix="torch-overhead-"), rank=0, world_size=1)
        hooks.install(tracer)
        api._tracer = tracer
    sys.path.insert(0, str(TRAIN.parent))
    import ddp_train as d

    args = d.parse_args(train_args)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    model, opt = d.build(args, 0, torch.device("cpu"))
    if mode == "profiler":
        from torch.profiler import ProfilerAction

        prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                      schedule=lambda _: ProfilerAction.RECORD)  # fmt: skip
        import torch.optim.optimizer as optim_mod

        optim_mod.register_optimizer_step_post_hook(lambda *_: prof.step())
        prof.start()
    batches = [d.batch_for(args, 0, s, torch.device("cpu")) for s in range(50)]
    for s in range(50):  # warm-up (DDP bucket rebuild, allocator, first flush)
        d.train_step(model, opt, *batches[s])
    if tracer is not None:
        tracer.flush()
    blocks = []
    for _ in range(CHILD_BLOCKS):
        t = time.process_time_ns()
        for s in range(CHILD_STEPS):
            d.train_step(model, opt, *batches[s % 50])
        blocks.append((time.process_time_ns() - t) / CHILD_STEPS)
    if prof is not None:
        prof.stop()
    if tracer is not None:
        tracer.close(complete=True)
        shutil.rmtree(tracer.writer.directory, ignore_errors=True)
    dist.destroy_process_group()
    print(f"cpu_ns_per_step_min={min(blocks):.0f} median={st.median(blocks):.0f}")


def run_child(mode: str, train_args: list[str]) -> float:
    proc = subprocess.run([sys.executable, __file__, "--child", mode, "--", *train_args],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)  # fmt: skip
    m = re.search(r"cpu_ns_per_step_min=(\d+)", proc.stdout)
    if proc.returncode != 0 or not m:
        raise SystemExit(f"in-process {mode} run failed:\n{proc.stderr[-3000:]}")
    return float(m.group(1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    p.add_argument("--skip-torchrun", action="store_true", help="only the in-process measurement")
    p.add_argument("train_args", nargs="*", help="extra ddp_train.py arguments (after --)")
    args = p.parse_args()
    if args.child:
        child(args.child, args.train_args)
        return
    if not args.skip_torchrun:
        torchrun_runs(args)
    in_process(args)


def in_process(args: argparse.Namespace) -> None:
    cost: dict[str, list[float]] = {m: [] for m in MODES}
    for _ in range(args.reps):
        for mode in MODES:
            cost[mode].append(run_child(mode, args.train_args))
    print(
        f"\nin-process, world size 1 (gloo), ddp_train.py {' '.join(args.train_args)}: CPU time per train_step, "
        f"min over {CHILD_BLOCKS} blocks of {CHILD_STEPS} steps, {args.reps} interleaved repetitions:"
    )
    best = {m: min(v) for m, v in cost.items()}
    for m in MODES:
        print(f"  {m:9s} {best[m] / 1e3:8.1f} us/step  (all: {', '.join(f'{x / 1e3:.1f}' for x in cost[m])})")
    for a, b in (("paradise", "untraced"), ("profiler", "untraced"), ("paradise", "profiler")):
        print(f"  {a}/{b}: {best[a] / best[b]:.3f}")
    print(f"  paradise adds {(best['paradise'] - best['untraced']) / 1e3:.1f} us/step, "
          f"the profiler {(best['profiler'] - best['untraced']) / 1e3:.1f} us/step")  # fmt: skip


def torchrun_runs(args: argparse.Namespace) -> None:
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
