"""Overhead of the paradise PyTorch tracer on examples/ddp_train.py, side by side with torch.profiler.

Part 1 (the measurement): each rank of one torchrun job (world size 1, then 2; gloo) builds ONE
ddp_train model (DDP + Adam) and runs ddp_train's own `train_step` on it in short blocks, rotating
through four modes for many rounds: `untraced`, `untraced2` (a second untraced block of the same
model: the noise floor of the comparison), `paradise` (the tracer's hooks installed and this model
attached, exactly the hooks `paradise trace torch` installs; `hooks.uninstall()` removes every
one of them after the block) and `profiler` (torch.profiler, CPU activities, `prof.step()` per
step). Hooks and profiler start and stop outside the timed region; the rotation means no mode
always follows another, so load, frequency and cache drift hit all modes alike. Each block is
timed in process CPU (all threads of the rank: hooks, gloo threads, Parquet flushes), main-thread
CPU and wall time. "added" is each round's per-step time of a mode minus the same round's
`untraced` block: its median over rounds with a 95 % bootstrap interval (rounds resampled), and
its mean. The `untraced2` line shows what a difference of nothing looks like.

--cprofile N: after the measurement, rank 0 runs N more traced blocks under cProfile and prints
the tracer's own functions (tracers/) by their total time per step.

Part 2 (optional, --whole-runs N): whole torchrun runs of the script, untraced, under the
tracer's bootstrap (as `paradise trace torch`) and under torch.profiler alone, interleaved;
rank 0's training-loop time per step. Includes process start-up effects and is far noisier.

    .venv/bin/python bench/torch_overhead.py [--ranks 1 2] [--rounds 40] [--block 20] [--whole-runs 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
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
BOOTSTRAP = 4000
GOAL_US = 50.0  # issue 25: the tracer's added process CPU per step


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


# --- part 1: interleaved blocks of one model in one job ----------------------------------------


def _tracer_profile(run_block, blocks: int, block: int) -> str:  # noqa: ANN001
    """cProfile of the steps of `blocks` traced blocks: the tracer's own functions, time per step."""
    import cProfile
    import pstats

    prof = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU time: the load's preemptions are not charged
    for _ in range(blocks):
        run_block(prof)
    steps = blocks * block
    rows = []
    for (file, line, func), (_cc, calls, tt, ct, _callers) in pstats.Stats(prof).stats.items():  # type: ignore[attr-defined]
        if "/tracers/" in file:
            rows.append((tt, ct, calls, f"{Path(file).parent.name}/{Path(file).name}:{line}({func})"))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    lines = [f"  cProfile, {steps} traced steps on rank 0 (thread CPU, inflated by the profiler itself): "
             f"tracer functions' own time {total / steps * 1e6:.1f} us/step"]
    lines += [f"    {tt / steps * 1e6:7.2f} us own {ct / steps * 1e6:7.2f} us cum {calls / steps:6.2f} calls/step  {name}"
              for tt, ct, calls, name in rows[:12]]
    return "\n".join(lines)


def _count_flushes(tracer) -> dict[str, int]:  # noqa: ANN001
    """Counts the tracer's Parquet flushes and their CPU (this thread's) and wall ns."""
    stats = {"n": 0, "cpu_ns": 0, "wall_ns": 0}
    flush = tracer.writer.flush

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        w, c = time.perf_counter_ns(), time.thread_time_ns()
        try:
            return flush(*args, **kwargs)
        finally:
            stats["n"] += 1
            stats["cpu_ns"] += time.thread_time_ns() - c
            stats["wall_ns"] += time.perf_counter_ns() - w

    tracer.writer.flush = counted
    return stats


def ab_child(rounds: int, block: int, cprofile_blocks: int, train_args: list[str]) -> None:
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
    model, opt = d.build(args, rank, cpu)
    batches = [d.batch_for(args, rank, s, cpu) for s in range(BATCHES)]
    trace_dir = tempfile.mkdtemp(prefix=f"torch-overhead-{rank}-")
    tracer = Tracer(trace_dir, rank=rank, world_size=world)
    flushes = _count_flushes(tracer)
    step = 0

    def steps(n: int, prof=None) -> None:  # noqa: ANN001
        nonlocal step
        for _ in range(n):  # prof: a torch profiler to step
            d.train_step(model, opt, *batches[step % BATCHES])
            step += 1
            if prof is not None:
                prof.step()

    steps(WARMUP_STEPS)  # DDP's bucket rebuild, the allocator
    with hooks.tracing(tracer, [model]):  # the tracer's first Parquet write, its bucket hooks
        steps(WARMUP_STEPS)
    tracer.flush()
    flushes.update(n=0, cpu_ns=0, wall_ns=0)  # from here: the flushes of the measured traced blocks
    off_since = time.monotonic_ns()

    from torch.profiler import ProfilerAction, ProfilerActivity, profile

    def traced_block(cprof=None) -> tuple[int, int, int]:  # noqa: ANN001
        nonlocal off_since
        hooks.install(tracer, [model])
        api._tracer = tracer
        # The tracer flushes a Parquet part every 2 s of its run; here it runs a quarter of the
        # time: its flush clock is paused while off, so flushes per traced step stay as in a real run.
        tracer.writer._last_flush += time.monotonic_ns() - off_since
        try:
            return timed(block, cprof=cprof)
        finally:
            api._tracer = None
            hooks.uninstall()
            off_since = time.monotonic_ns()

    def timed(n: int, prof=None, cprof=None) -> tuple[int, int, int]:  # noqa: ANN001
        dist.barrier()
        if cprof is not None:  # cProfile of the steps alone (attach and detach are outside)
            cprof.enable()
        w, c, t = time.perf_counter_ns(), time.process_time_ns(), time.thread_time_ns()
        steps(n, prof)
        if cprof is not None:
            cprof.disable()
        return time.perf_counter_ns() - w, time.process_time_ns() - c, time.thread_time_ns() - t

    times: dict[str, list[tuple[float, float, float]]] = {m: [] for m in MODES}
    for r in range(rounds):
        for i in range(len(MODES)):
            mode = MODES[(i + r) % len(MODES)]  # rotated order: no mode always follows another
            if mode == "paradise":
                w, c, t = traced_block()
            elif mode == "profiler":
                prof = profile(activities=[ProfilerActivity.CPU], schedule=lambda _: ProfilerAction.RECORD)
                prof.start()
                w, c, t = timed(block, prof)
                prof.stop()
            else:
                w, c, t = timed(block)
            times[mode].append((w / block, c / block, t / block))
    flush_stats = dict(flushes, steps=rounds * block)
    report = ""
    if cprofile_blocks:
        if rank == 0:
            report = _tracer_profile(traced_block, cprofile_blocks, block)
        else:
            for _ in range(cprofile_blocks):
                traced_block()
    tracer.close(complete=True)
    shutil.rmtree(trace_dir, ignore_errors=True)
    dist.destroy_process_group()
    if rank == 0:
        print("RESULT " + json.dumps({"world": world, "times": times, "flushes": flush_stats,
                                             "cprofile": report}), flush=True)


def bootstrap(diffs: list[float], stat=statistics.median, reps: int = BOOTSTRAP, seed: int = 25) -> tuple[float, float]:  # noqa: ANN001
    """95 % percentile-bootstrap interval of stat(diffs) (rounds resampled)."""
    rng = random.Random(seed)
    n = len(diffs)
    vals = sorted(stat(rng.choices(diffs, k=n)) for _ in range(reps))
    return vals[int(0.025 * reps)], vals[int(0.975 * reps) - 1]


def summarize(times: dict[str, list[list[float]]]) -> list[str]:
    """The per-mode table and, per measure, each mode's added time per step against `untraced`."""
    lines = [f"  {'':9s} {'process CPU us':>24s} {'main-thread CPU us':>24s} {'wall us':>24s}",
             f"  {'':9s}" + f" {'median':>9s} {'min':>7s} {'paired':>6s}" * 3]
    for mode in MODES:
        cells = []
        for k in (1, 2, 0):  # process CPU, main-thread CPU, wall
            vals = [x[k] for x in times[mode]]
            paired = statistics.median(v / b[k] for v, b in zip(vals, times["untraced"]))
            cells.append(f" {statistics.median(vals) / 1e3:9.1f} {min(vals) / 1e3:7.1f} {paired:6.3f}")
        lines.append(f"  {mode:9s}" + "".join(cells))
    for k, label in ((1, "process CPU"), (2, "main-thread CPU"), (0, "wall")):
        lines.append(f"  {label} added per step vs untraced, over rounds [95 % bootstrap CI]:")
        for mode in MODES[1:]:
            diffs = [(x[k] - b[k]) / 1e3 for x, b in zip(times[mode], times["untraced"])]
            lo, hi = bootstrap(diffs)
            mlo, mhi = bootstrap(diffs, statistics.fmean)
            lines.append(f"    {mode:9s} median {statistics.median(diffs):+8.1f} us [{lo:+8.1f}, {hi:+8.1f}]  "
                         f"mean {statistics.fmean(diffs):+8.1f} us [{mlo:+8.1f}, {mhi:+8.1f}]")
    return lines


def verdict(times: dict[str, list[list[float]]]) -> list[str]:
    """Process CPU: is the tracer's added time at most GOAL_US (median and mean, by their 95 % CIs)
    and below the profiler's (the per-round difference of the two)?"""
    add = {m: [(x[1] - b[1]) / 1e3 for x, b in zip(times[m], times["untraced"])] for m in ("paradise", "profiler")}
    lines = []
    for name, stat in (("median", statistics.median), ("mean", statistics.fmean)):
        lo, hi = bootstrap(add["paradise"], stat)
        goal = "met" if hi <= GOAL_US else ("not met" if lo > GOAL_US else "not resolved")
        vs = [(p - q) for p, q in zip(add["paradise"], add["profiler"])]
        vlo, vhi = bootstrap(vs, stat)
        below = "yes" if vhi < 0 else ("no" if vlo >= 0 else "not resolved")
        lines.append(f"  goal by the {name}: added process CPU <= {GOAL_US:.0f} us/step {goal} ({stat(add['paradise']):+.1f} us, "
                     f"CI [{lo:+.1f}, {hi:+.1f}]); below the profiler {below} (paradise - profiler {stat(vs):+.1f} us, "
                     f"CI [{vlo:+.1f}, {vhi:+.1f}])")
    return lines


def interleaved(nproc: int, args: argparse.Namespace) -> None:
    target = [__file__, "--ab-child", "--rounds", str(args.rounds), "--block", str(args.block),
              "--cprofile", str(args.cprofile), "--", *args.train_args]  # fmt: skip
    proc = _torchrun(nproc, target, _clean_env())
    m = re.search(r"^RESULT (.*)$", proc.stdout, re.M)
    if proc.returncode != 0 or not m:
        raise SystemExit(
            f"interleaved run with {nproc} ranks failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
        )
    result = json.loads(m.group(1))
    print(
        f"\n{nproc} rank(s), gloo, ddp_train.py {' '.join(args.train_args)}: one model, {args.rounds} rounds x "
        f"4 modes x {args.block} steps, rank 0, per step:"
    )
    print("\n".join(summarize(result["times"])))
    print("\n".join(verdict(result["times"])))
    f = result["flushes"]
    print(f"  the tracer's Parquet flushes in the traced blocks: {f['n']} in {f['steps']} steps, "
          f"{f['cpu_ns'] / max(f['n'], 1) / 1e6:.2f} ms CPU ({f['wall_ns'] / max(f['n'], 1) / 1e6:.2f} ms wall) each, "
          f"{f['cpu_ns'] / f['steps'] / 1e3:.1f} us CPU per traced step (included above)")
    if result["cprofile"]:
        print(result["cprofile"])


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
    p.add_argument("--cprofile", type=int, default=0, help="traced blocks profiled with cProfile after part 1")
    p.add_argument("--ab-child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("train_args", nargs="*", help="extra ddp_train.py arguments (after --)")
    args = p.parse_args()
    if args.ab_child:
        ab_child(args.rounds, args.block, args.cprofile, args.train_args)
        return
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for nproc in args.ranks:
        interleaved(nproc, args)
    if args.whole_runs:
        whole_runs(args)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
