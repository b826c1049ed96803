"""Python frames, C calls and clock reads the PyTorch tracer's hooks make per training step, counted.

Counts do not depend on the load (bench/torch_overhead.py's CPU times do), so they show what a
change to the hooks removes. One process (world size 1, gloo, examples/ddp_train.py's model and
train_step) runs warm-up steps, then `--steps` traced steps under sys.setprofile: every Python
frame whose code lies in tracers/ (by function), every C function those frames call (by name),
and the clock reads among them (time.time_ns, time.monotonic_ns, time.perf_counter_ns); then as
many steps under cProfile (thread CPU) for each tracer function's own time per step, which the
profiler inflates by its per-call cost (compare functions, not absolute figures). The tracer's
timed flush is off (the Parquet part writer is another part of issue 25).

    .venv/bin/python bench/torch_hook_calls.py [--root CHECKOUT] [--steps 50]

--root counts the tracer of another checkout (e.g. an export of main) with this script.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARMUP_STEPS = 20
CLOCKS = {"time_ns", "monotonic_ns", "perf_counter_ns", "thread_time_ns", "process_time_ns"}


def count(root: str, steps: int) -> tuple[collections.Counter, collections.Counter, dict[str, float]]:
    """(Python frames by function, C calls by name) of `steps` traced steps, as totals; then the
    tracer functions' own thread CPU seconds over `steps` more steps under cProfile."""
    sys.path.insert(0, root)
    sys.path.insert(0, str(Path(root) / "examples"))
    os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", WORLD_SIZE="1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    import ddp_train as d
    import torch
    import torch.distributed as dist

    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    args = d.parse_args([])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    cpu = torch.device("cpu")
    model, opt = d.build(args, 0, cpu)
    batches = [d.batch_for(args, 0, s, cpu) for s in range(steps)]
    for s in range(WARMUP_STEPS):  # DDP's bucket rebuild, Adam's state
        d.train_step(model, opt, *batches[s % steps])
    tr = Tracer(tempfile.mkdtemp(prefix="torch-hook-calls-"), rank=0, world_size=1)
    tr.flush_interval_ns = tr.writer.flush_interval_ns = 10**18  # no timed flush inside the counted steps
    frames: collections.Counter = collections.Counter()
    ccalls: collections.Counter = collections.Counter()
    tracer_dir = str(Path(root) / "tracers")

    def profiler(frame, event, arg) -> None:  # noqa: ANN001
        if not frame.f_code.co_filename.startswith(tracer_dir):
            return
        if event == "call":
            frames[f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_qualname}"] += 1
        elif event == "c_call":
            ccalls[getattr(arg, "__qualname__", None) or getattr(arg, "__name__", repr(arg))] += 1

    prof = cProfile.Profile(time.thread_time_ns, 1e-9)  # CPU time: preemptions by the load are not charged
    with hooks.tracing(tr, [model]):
        for s in range(5):  # the bucket hooks go in after a forward
            d.train_step(model, opt, *batches[s])
        tr.flush()
        sys.setprofile(profiler)
        try:
            for s in range(steps):
                d.train_step(model, opt, *batches[s])
        finally:
            sys.setprofile(None)
        tr.flush()
        prof.enable()
        try:
            for s in range(steps):
                d.train_step(model, opt, *batches[s])
        finally:
            prof.disable()
    tr.close(complete=True)
    dist.destroy_process_group()
    own: dict[str, float] = {}
    for (file, _line, func), (_cc, _calls, tt, _ct, _callers) in pstats.Stats(prof).stats.items():  # type: ignore[attr-defined]
        if file.startswith(tracer_dir):
            own[f"{Path(file).name}:{func}"] = own.get(f"{Path(file).name}:{func}", 0.0) + tt
    return frames, ccalls, own


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=str(ROOT), help="checkout whose tracer is counted (default: this one)")
    p.add_argument("--steps", type=int, default=50, help="traced steps counted")
    args = p.parse_args()
    frames, ccalls, own = count(os.path.abspath(args.root), args.steps)
    n = args.steps
    clock = sum(v for k, v in ccalls.items() if k.rsplit(".", 1)[-1] in CLOCKS)
    print(f"tracer of {args.root}: world size 1, gloo, ddp_train.py model, {n} traced steps, per step: "
          f"{sum(frames.values()) / n:.2f} Python frames in tracers/, {sum(ccalls.values()) / n:.2f} C calls from "
          f"them, {clock / n:.2f} clock reads")
    print("  Python frames per step by function:")
    for name, k in frames.most_common():
        print(f"    {k / n:6.2f}  {name}")
    print("  C calls per step by function:")
    for name, k in ccalls.most_common():
        print(f"    {k / n:6.2f}  {name}")
    print(f"  own thread CPU per step under cProfile ({n} more steps; the profiler's own cost per call is in it): "
          f"{sum(own.values()) / n * 1e6:.1f} us in tracers/")
    for name, tt in sorted(own.items(), key=lambda kv: -kv[1]):
        print(f"    {tt / n * 1e6:6.2f} us  {name}")


if __name__ == "__main__":
    main()
