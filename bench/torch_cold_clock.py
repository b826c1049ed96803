"""A tracer hook's cost when the caches are cold, with the clock read through Tracer.now vs inline.

A training step calls the tracer's hooks between long stretches of torch's C++ work, which evict
the interpreter's code and the hooks' objects from the caches: a hook then costs several us,
against a few hundred ns warm, and what it costs follows the code and objects it touches more
than its instructions. This times the DDP bucket hook (tracers.torch.buckets) in both clock
forms, each call after 32 MB of memory traffic, the two forms alternating call by call (the load
drifts alike for both); a second call right after shows the warm cost.

    .venv/bin/python bench/torch_cold_clock.py [--calls 600]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tracers.torch import clock  # noqa: E402
from tracers.torch.tracer import Tracer  # noqa: E402

THRASH_BYTES = 32 * 1024 * 1024


class _Module:
    require_backward_grad_sync = True


def _hooks(tr: Tracer) -> dict[str, Any]:
    """The bucket hook's body with each clock form."""
    module, launch = _Module(), [None]

    def through_now(_param: Any) -> None:
        if module.require_backward_grad_sync:
            launch[0] = t = tr.now()
            tr.last_launch = t

    read, base = clock.reader(tr)

    def inline(_param: Any) -> None:
        if module.require_backward_grad_sync:
            launch[0] = t = read() - base
            tr.last_launch = t

    return {"Tracer.now()": through_now, "clock.reader inline": inline}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=600, help="cold calls of each form")
    args = p.parse_args()
    tr = Tracer(tempfile.mkdtemp(prefix="torch-cold-clock-"), rank=0, world_size=1)
    hooks = _hooks(tr)
    big = np.ones(THRASH_BYTES // 8)
    clock_ns = time.perf_counter_ns
    cold: dict[str, list[int]] = {k: [] for k in hooks}
    warm: dict[str, list[int]] = {k: [] for k in hooks}
    for _ in range(args.calls):
        for name, hook in hooks.items():
            big += 1.0  # evicts the caches as a stretch of torch work does
            t = clock_ns()
            hook(None)
            cold[name].append(clock_ns() - t)
            t = clock_ns()
            hook(None)
            warm[name].append(clock_ns() - t)
    tr.close(complete=True)
    print(f"bucket hook, {args.calls} calls per form alternating, each after {THRASH_BYTES >> 20} MB of memory traffic:")
    for name in hooks:
        c = cold[name]
        print(f"  {name:20s} cold median {statistics.median(c) / 1e3:6.2f} us (min {min(c) / 1e3:5.2f}), "
              f"the call after it {statistics.median(warm[name]):5.0f} ns")
    a, b = (statistics.median(cold[k]) for k in hooks)
    print(f"  inline saves {(a - b) / 1e3:.2f} us per cold call ({(a - b) / a:.0%})")


if __name__ == "__main__":
    main()
