"""The one-process DDP run the tracer-cost benches measure (bench/torch_hook_calls.py,
bench/torch_instructions.py): examples/ddp_train.py's model and train_step on a world of one
(gloo, one thread), warmed up, with the tracer of the checkout the bench was pointed at."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

WARMUP_STEPS = 20
"""Untraced steps before anything is measured: DDP's bucket rebuild, the allocator, Adam's state
(the first steps also run ~1 % more instructions than later ones)."""
NO_TIMED_FLUSH_NS = 10**18
"""A flush interval no measured block reaches: flushes happen only where the bench calls them."""


def warmed_up(root: str, steps: int) -> tuple[Any, tuple[Any, Any], list]:
    """(examples/ddp_train.py as a module, (model, optimizer), `steps` batches) of checkout `root`,
    in a gloo process group of one, after WARMUP_STEPS untraced steps. `root` goes first on
    sys.path, so `tracers` imported after this call is that checkout's tracer."""
    sys.path.insert(0, root)
    sys.path.insert(0, str(Path(root) / "examples"))
    os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", WORLD_SIZE="1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    import ddp_train as d
    import torch
    import torch.distributed as dist

    args = d.parse_args([])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    cpu = torch.device("cpu")
    model = d.build(args, 0, cpu)
    batches = [d.batch_for(args, 0, s, cpu) for s in range(steps)]
    for s in range(WARMUP_STEPS):
        d.train_step(*model, *batches[s % steps])
    return d, model, batches


def without_timed_flush(tracer: Any) -> Any:
    """The tracer, its timed flush off (bench-only: the tracer's own interval is what runs)."""
    tracer.flush_interval_ns = tracer.writer.flush_interval_ns = NO_TIMED_FLUSH_NS
    return tracer
