"""Overhead of the paradise PyTorch tracer on examples/ddp_train.py, side by side with torch.profiler.

Part 1 (the measurement): each rank of one torchrun job (world size 1, then 2; gloo) builds four
identical ddp_train models (same seed): `untraced`, `untraced2` (a second plain copy: the noise
floor), `profiler`, and `paradise` (built with the tracer's hooks installed, exactly as
`paradise trace torch` installs them). It then runs ddp_train's own `train_step` in short blocks,
rotating through the four modes for many rounds, so machine load, frequency and cache drift hit
all modes alike. The tracer's hooks are installed only during `paradise` blocks and the profiler
runs only during `profiler` blocks (CPU activities, `prof.step()` after each step; its start and
stop are outside the timed region). Each block is timed in process CPU time (all threads of the
rank: hooks, gloo threads, Parquet flushes), main-thread CPU time and wall time. Ratios
are to `untraced`: the median over rounds of each round's paired ratio, and the ratio of medians;
"added per step" is the median over rounds of each block's per-step time minus the same round's
`untraced` block. The `untraced2` lines show how large a difference the measurement can resolve.

Part 2 (optional, --whole-runs N): whole torchrun runs of the script, untraced, under the
tracer's bootstrap (as `paradise trace torch`) and under torch.profiler alone, interleaved;
rank 0's training-loop time per step. Includes process start-up effects and is far noisier.

    .venv/bin/python bench/torch_overhead.py [--ranks 1 2] [--rounds 40] [--block 20] [--whole-runs 0]
"""

from __future__ import annotations

import argparse
import json
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
MODES = ("untraced", "untraced2", "paradise", "profiler")
WARMUP_STEPS = 30
BATCHES = 50


def _torchrun(nproc: int, target: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(nproc),
        *target,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, cwd=ROOT)


def _clean_env() -> dict[str, str]:
    env = dict(os.environ, TORCH_DISABLE_SHARE_RDZV_TCP_STORE="1")
    for k in ("PARADISE_TRACE", "PARADISE_TRACE_PROFILER", "PARADISE_TRACE_PROFILER_DIR"):
        env.pop(k, None)
    return env


# --- part 1: interleaved blocks in one job ---------------------------------------------------


def ab_child(rounds: int, block: int, train_args: list[str]) -> None:
    """One rank of the interleaved measurement; rank 0 prints `RESULT <json>`."""
    import torch
    import torch.distributed as dist

    sys.path.insert(0, str(ROOT))
    import tracers.torch as api
    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    sys.path.insert(0, str(TRAIN.parent))
    import ddp_train as d

    args = d.parse_args(train_args)
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    cpu = torch.device("cpu")
    models = {m: d.build(args, rank, cpu) for m in ("untraced", "untraced2", "profiler")}
    trace_dir = tempfile.mkdtemp(prefix=f"torch-overhead-{rank}-")
    tracer = Tracer(trace_dir, rank=rank, world_size=world)
    hooks.install(tracer)
    models["paradise"] = d.build(args, rank, cpu)
    batches = [d.batch_for(args, rank, s, cpu) for s in range(BATCHES)]
    for m in MODES:  # warm-up: DDP's bucket rebuild, allocator, the tracer's first Parquet write
        for s in range(WARMUP_STEPS):
            d.train_step(*models[m], *batches[s])
    tracer.flush()
    hooks.uninstall()
    off_since = time.monotonic_ns()

    from torch.profiler import ProfilerAction, ProfilerActivity, profile

    times: dict[str, list[tuple[float, float, float]]] = {m: [] for m in MODES}
    for r in range(rounds):
        for i in range(len(MODES)):
            mode = MODES[(i + r) % len(MODES)]  # rotated order: no mode always follows another
            model, opt = models[mode]
            prof = None
            if mode == "paradise":
                hooks.install(tracer)
                api._tracer = tracer
                # The tracer flushes a Parquet part every 2 s of its run; here it runs a quarter
                # of the time: pause its flush clock while off, so flushes per traced step stay real.
                tracer.writer._last_flush += time.monotonic_ns() - off_since
            elif mode == "profiler":
                prof = profile(activities=[ProfilerActivity.CPU], schedule=lambda _: ProfilerAction.RECORD)
                prof.start()
            dist.barrier()
            w, c, t = time.perf_counter_ns(), time.process_time_ns(), time.thread_time_ns()
            for s in range(block):
                d.train_step(model, opt, *batches[(r * block + s) % BATCHES])
                if prof is not None:
                    prof.step()
            w, c, t = time.perf_counter_ns() - w, time.process_time_ns() - c, time.thread_time_ns() - t
            if prof is not None:
                prof.stop()
            if mode == "paradise":
                api._tracer = None
                hooks.uninstall()
                off_since = time.monotonic_ns()
            times[mode].append((w / block, c / block, t / block))
    tracer.close(complete=True)
    shutil.rmtree(trace_dir, ignore_errors=True)
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps({"world": world, "times": times}), flush=True)


def interleaved(nproc: int, args: argparse.Namespace) -> None:
    target = [
        __file__,
        "--ab-child",
        "--rounds",
        str(args.rounds),
        "--block",
        str(args.block),
        "--",
        *args.train_args,
    ]
    proc = _torchrun(nproc, target, _clean_env())
    m = re.search(r"^RESULT (.*)$", proc.stdout, re.M)
    if proc.returncode != 0 or not m:
        raise SystemExit(
            f"interleaved run with {nproc} ranks failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    times = json.loads(m.group(1))["times"]
    print(
        f"\n{nproc} rank(s), gloo, ddp_train.py {' '.join(args.train_args)}: {args.rounds} rounds x 4 modes x "
        f"{args.block} steps, rank 0, per step:"
    )
    print(f"  {'':9s} {'process CPU us':>24s} {'main-thread CPU us':>24s} {'wall us':>24s}")
    print(f"  {'':9s}" + f" {'median':>9s} {'min':>7s} {'paired':>6s}" * 3)
    for mode in MODES:
        cells = []
        for k in (1, 2, 0):  # process CPU, main-thread CPU, wall
            vals = [x[k] for x in times[mode]]
            base = [x[k] for x in times["untraced"]]
            paired = statistics.median(v / b for v, b in zip(vals, base))
            cells.append(f" {statistics.median(vals) / 1e3:9.1f} {min(vals) / 1e3:7.1f} {paired:6.3f}")
        print(f"  {mode:9s}" + "".join(cells))
    for k, label in ((1, "process CPU"), (0, "wall")):
        med = {mode: statistics.median(x[k] for x in times[mode]) for mode in MODES}
        pair = {
            mode: statistics.median(x[k] / b[k] for x, b in zip(times[mode], times["untraced"]))
            for mode in MODES
        }
        added = {  # median over rounds of the block's per-step time minus the same round's untraced block
            mode: statistics.median(x[k] - b[k] for x, b in zip(times[mode], times["untraced"])) / 1e3
            for mode in MODES
        }
        print(
            f"  {label} added per step (paired median): paradise +{added['paradise']:.1f} us, "
            f"profiler +{added['profiler']:.1f} us, noise floor untraced2 {added['untraced2']:+.1f} us"
        )
        print(
            f"  {label}: paradise/untraced {pair['paradise']:.3f} (ratio of medians "
            f"{med['paradise'] / med['untraced']:.3f}, +{(med['paradise'] - med['untraced']) / 1e3:.1f} us/step), "
            f"profiler/untraced {pair['profiler']:.3f} ({med['profiler'] / med['untraced']:.3f}), "
            f"paradise/profiler {med['paradise'] / med['profiler']:.3f}; "
            f"noise floor untraced2/untraced {pair['untraced2']:.3f} ({med['untraced2'] / med['untraced']:.3f})"
        )


# --- part 2: whole torchrun runs -------------------------------------------------------------

WHOLE_MODES = ("untraced", "paradise", "profiler")


def run_once(mode: str, nproc: int, steps: int, work: Path, extra: list[str]) -> tuple[float, float]:
    """(wall, CPU) training-loop ns per step on rank 0 for one torchrun run in the given mode."""
    env = _clean_env()
    target = [str(TRAIN)]
    if mode != "untraced":
        target = ["-m", "tracers.torch.run", str(TRAIN)]
    out = work / f"{mode}-{time.monotonic_ns()}"
    if mode == "paradise":
        env.update(PARADISE_TRACE=str(out), PARADISE_TRACE_ORIGIN_NS=str(time.time_ns()))
    elif mode == "profiler":
        env.update(PARADISE_TRACE_PROFILER="1", PARADISE_TRACE_PROFILER_DIR=str(out))
    proc = _torchrun(nproc, [*target, "--steps", str(steps), "--timing", *extra], env)
    if proc.returncode != 0:
        raise SystemExit(f"{mode} run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    m = re.search(r"train_loop_ns=(\d+) train_loop_cpu_ns=(\d+) steps=(\d+)", proc.stdout)
    if not m:
        raise SystemExit(f"{mode}: no train_loop_ns line in the output:\n{proc.stdout[-1000:]}")
    shutil.rmtree(out, ignore_errors=True)
    n = int(m.group(3))
    return int(m.group(1)) / n, int(m.group(2)) / n


def whole_runs(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="torch-overhead-"))
    wall: dict[str, list[float]] = {m: [] for m in WHOLE_MODES}
    cpu: dict[str, list[float]] = {m: [] for m in WHOLE_MODES}
    try:
        for _ in range(args.whole_runs):
            for mode in WHOLE_MODES:
                w, c = run_once(mode, 2, args.steps, work, args.train_args)
                wall[mode].append(w)
                cpu[mode].append(c)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(
        f"\nwhole runs: 2 ranks, {args.steps} steps, {args.whole_runs} interleaved repetitions, rank 0 per step:"
    )
    for label, data in (("wall", wall), ("CPU", cpu)):
        med = {m: statistics.median(v) for m, v in data.items()}
        cells = "  ".join(f"{m} {med[m] / 1e6:.2f} ms (min {min(data[m]) / 1e6:.2f})" for m in WHOLE_MODES)
        print(f"  {label:4s} median {cells}; paradise/untraced {med['paradise'] / med['untraced']:.3f}, "
              f"profiler/untraced {med['profiler'] / med['untraced']:.3f}")  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2], help="world sizes of the interleaved part")
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--block", type=int, default=20, help="steps per block")
    p.add_argument("--whole-runs", type=int, default=0, help="repetitions of the whole-run part (0: skip)")
    p.add_argument("--steps", type=int, default=200, help="steps of each whole run")
    p.add_argument("--ab-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("train_args", nargs="*", help="extra ddp_train.py arguments (after --)")
    args = p.parse_args()
    if args.ab_child:
        ab_child(args.rounds, args.block, args.train_args)
        return
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for nproc in args.ranks:
        interleaved(nproc, args)
    if args.whole_runs:
        whole_runs(args)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
