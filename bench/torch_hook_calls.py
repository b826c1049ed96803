"""Python frames, C calls and clock reads the PyTorch tracer's hooks make per training step, counted.

Counts do not depend on the load (bench/torch_overhead.py's CPU times do), so they show what a
change to the hooks removes. One process (world size 1, gloo, examples/ddp_train.py's model and
train_step) runs warm-up steps, then `--steps` traced steps under sys.setprofile: every Python
frame whose code lies in tracers/ (by function), every C function those frames call (by name),
and the clock reads among them (time.time_ns, time.monotonic_ns, time.perf_counter_ns). Then as
many steps with each hook the tracer installed timed by perf_counter_ns (optimizer pre/post,
bucket launch, and the forward and backward wrappers less the torch call they wrap), an empty
function's time under the same timer taken out; the median per step drops the steps the load
preempted. The tracer's timed flush is off (the Parquet part writer is another part of issue 25).

    .venv/bin/python bench/torch_hook_calls.py [--root CHECKOUT] [--steps 50]

--root counts the tracer of another checkout (e.g. an export of main) with this script;
PARADISE_NATIVE_RECORDER=0 counts the Python hooks where the compiled ones (tracers/torch/_hooks.c) are
built: those enter no Python frame, so the counts are 0 and only the timings tell.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from torch_one_rank import warmed_up, without_timed_flush

ROOT = Path(__file__).resolve().parents[1]
RECORDER = "?"  # which recorder ran (tracers.torch.native), set by count()
CLOCKS = {"time_ns", "monotonic_ns", "perf_counter_ns", "thread_time_ns", "process_time_ns"}


def count(root: str, steps: int) -> tuple[collections.Counter, collections.Counter, dict[str, list[int]]]:
    """(Python frames by function, C calls by name) of `steps` traced steps, as totals; then each
    hook's own ns per step over `steps` more steps (_time_hooks)."""
    d, (model, opt), batches = warmed_up(root, steps)
    import torch
    import torch.distributed as dist

    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    folder = tempfile.mkdtemp(prefix="torch-hook-calls-")
    tr = without_timed_flush(Tracer(folder, rank=0, world_size=1))
    global RECORDER
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

    with hooks.tracing(tr, [model]):
        RECORDER = getattr(tr, "recorder_kind", "python (before the compiled hooks)")
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
        spent = _time_hooks(torch, model, opt, d.train_step, batches, steps)
        tr.flush()
    tr.close(complete=True)
    shutil.rmtree(folder, ignore_errors=True)
    dist.destroy_process_group()
    return frames, ccalls, spent


def _timer(spent: dict[str, int], name: str, fn: Any) -> Any:
    """fn, its calls' perf_counter ns added to spent[name]."""
    clock = time.perf_counter_ns

    def timed(*args: Any, **kwargs: Any) -> Any:
        t = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] += clock() - t

    return timed


def _time_hooks(torch: Any, model: Any, opt: Any, train_step: Any, batches: list, steps: int) -> dict[str, list[int]]:
    """Per step, ns spent in each hook the tracer installed (the wrappers' own part: their time
    minus the wrapped torch call's), each call less an empty function's time under the same timer."""
    import torch.optim.optimizer as optim_mod
    from torch.nn.parallel import DistributedDataParallel as DDP

    spent: dict[str, int] = collections.defaultdict(int)
    for label, table in (("optimizer pre", optim_mod._global_optimizer_pre_hooks),
                         ("optimizer post", optim_mod._global_optimizer_post_hooks)):
        for key, fn in list(table.items()):
            table[key] = _timer(spent, label, fn)
    for p in model.parameters():
        table = p._post_accumulate_grad_hooks or {}
        for key, fn in list(table.items()):
            table[key] = _timer(spent, "bucket launch", fn)
    for label, owner, attr, inner in (("forward", DDP, "forward", "orig_forward"),
                                      ("backward", torch.autograd, "backward", "orig_backward")):
        wrapper = getattr(owner, attr)
        if hasattr(wrapper, "wrapped"):  # a compiled hook (tracers/torch/_hooks.c): its torch call is settable
            wrapper.wrapped = _timer(spent, f"-{label}", wrapper.wrapped)
        else:
            cell = wrapper.__closure__[wrapper.__code__.co_freevars.index(inner)]
            cell.cell_contents = _timer(spent, f"-{label}", cell.cell_contents)  # the torch call inside it
        setattr(owner, attr, _timer(spent, label, wrapper))  # uninstall() restores torch's own
    empty = _timer(spent, "empty", lambda: None)
    for _ in range(10_000):
        empty()
    per_call = spent.pop("empty") / 10_000
    calls = {"optimizer pre": 1, "optimizer post": 1, "forward": 2, "backward": 2}
    per_step: dict[str, list[int]] = collections.defaultdict(list)
    launches = len(model._get_ddp_logging_data()["rebuilt_bucket_sizes"].replace(",", " ").split())
    for s in range(steps):
        spent.clear()
        train_step(model, opt, *batches[s])
        for label in ("forward", "backward"):
            spent[label] -= spent.pop(f"-{label}")
        for label, ns in spent.items():
            per_step[label].append(ns - per_call * calls.get(label, launches))
    per_step["(empty timed call, taken out)"] = [per_call]
    return per_step


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=str(ROOT), help="checkout whose tracer is counted (default: this one)")
    p.add_argument("--steps", type=int, default=50, help="traced steps counted")
    args = p.parse_args()
    frames, ccalls, spent = count(os.path.abspath(args.root), args.steps)
    n = args.steps
    clock = sum(v for k, v in ccalls.items() if k.rsplit(".", 1)[-1] in CLOCKS)
    print(f"tracer of {args.root} ({RECORDER} recorder): world size 1, gloo, ddp_train.py model, {n} traced steps, "
          "per step: "
          f"{sum(frames.values()) / n:.2f} Python frames in tracers/, {sum(ccalls.values()) / n:.2f} C calls from "
          f"them, {clock / n:.2f} clock reads")
    print("  Python frames per step by function:")
    for name, k in frames.most_common():
        print(f"    {k / n:6.2f}  {name}")
    print("  C calls per step by function:")
    for name, k in ccalls.most_common():
        print(f"    {k / n:6.2f}  {name}")
    print(f"  the hooks' own time per step (perf_counter around each, median [min] of {n} more steps; a "
          "wrapper less the torch call in it):")
    total = [sum(v) for v in zip(*(v for k, v in spent.items() if not k.startswith("(")))]
    for name, ns in spent.items():
        print(f"    {statistics.median(ns) / 1e3:6.2f} us [{min(ns) / 1e3:6.2f}]  {name}")
    print(f"    {statistics.median(total) / 1e3:6.2f} us [{min(total) / 1e3:6.2f}]  all hooks (sum per step)")

if __name__ == "__main__":
    main()
