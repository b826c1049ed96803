"""What one tracer hook costs when the training step has evicted the caches: compiled and Python hooks.

A traced training step calls each hook once, after torch's own work has pushed the tracer's code and
data out of the caches, so a hook pays for every cache line and page it touches more than for its
instructions. One process (world size 1, gloo, no model) installs the hooks over each recorder in
turn (PARADISE_NATIVE_RECORDER=1, then 0) and calls the optimizer's post hook (after its pre hook:
a plain step end) and a bucket's gradient hook directly, each right after writing a 48 MiB buffer
(cold), and again with nothing between (warm); a no-op call and `time.time_ns()` under the same
eviction show the floor. Medians of `--calls` calls, perf_counter ns around each.

    .venv/bin/python bench/torch_cold_hooks.py [--calls 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EVICT_BYTES = 48 << 20


class _Optimizer:
    """Enough of an optimizer for the step hooks (no step count of its own: the tracer counts)."""

    def __init__(self) -> None:
        self.state: dict = {}
        self.param_groups = [{"params": []}]


class _Module:
    def __init__(self) -> None:
        self.require_backward_grad_sync = True


def _measure(native: str, calls: int, evict) -> dict[str, list[int]]:  # noqa: ANN001
    import torch.optim.optimizer as optim_mod

    from tracers.torch import hooks
    from tracers.torch.buckets import BucketWatch
    from tracers.torch.tracer import Tracer

    os.environ["PARADISE_NATIVE_RECORDER"] = native
    tr = Tracer(tempfile.mkdtemp(prefix="torch-cold-hooks-"), rank=0, world_size=1)
    tr.flush_interval_ns = tr.writer.flush_interval_ns = 10**18  # no flush inside the measurement
    hooks.install(tr)
    pre = next(iter(optim_mod._global_optimizer_pre_hooks.values()))
    post = next(iter(optim_mod._global_optimizer_post_hooks.values()))
    watch = BucketWatch(tr, _Module(), ("pg0", 1))
    watch.info = [(4096, "float32", "pg0", 1)]
    bucket = watch._hook(0)
    opt = _Optimizer()
    clock = time.perf_counter_ns
    out: dict[str, list[int]] = {}

    def timed(label: str, fn, cold: bool) -> None:  # noqa: ANN001
        if cold:
            evict()
        t = clock()
        fn()
        out.setdefault(label, []).append(clock() - t)

    for _ in range(calls):
        for cold in (True, False):
            tag = "cold" if cold else "warm"
            pre(opt, (), {})
            timed(f"optimizer post (a step end), {tag}", lambda: post(opt, (), {}), cold)
            timed(f"bucket gradient hook, {tag}", lambda: bucket(None), cold)
            tr.launched.clear()
            timed(f"no-op call, {tag}", lambda: None, cold)
            timed(f"time.time_ns(), {tag}", time.time_ns, cold)
        tr.flush()
    hooks.uninstall()
    tr.close(complete=True)
    out["recorder"] = [tr.recorder_kind]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=300, help="calls of each hook, cold and warm")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", WORLD_SIZE="1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    import torch.distributed as dist

    dist.init_process_group("gloo")
    big = bytearray(EVICT_BYTES)
    view = memoryview(big)
    page = b"\x01" * (EVICT_BYTES // 4096)

    def evict() -> None:
        big[::4096] = page
        sum(view[::64])

    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for native in ("1", "0", "1", "0"):
        res = _measure(native, args.calls, evict)
        print(f"{res.pop('recorder')[0]} recorder: median [25th percentile] of {args.calls} calls, us")
        for label, ns in res.items():
            s = sorted(ns)
            print(f"  {statistics.median(s) / 1e3:7.2f} [{s[len(s) // 4] / 1e3:6.2f}]  {label}")
    dist.destroy_process_group()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
