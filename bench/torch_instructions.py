"""Instructions the PyTorch tracer adds per training step, counted by valgrind's callgrind.

CPU time per step on a shared machine moves by more than the tracer costs (bench/torch_overhead.py's
noise floor is ~100 us); instruction counts do not depend on the load. One process (world size 1,
gloo, examples/ddp_train.py's model and train_step, one model instance) runs 10-step blocks in the
order untraced, traced, traced, untraced (the drift between blocks cancels; the tracer's hooks are
attached to the model for the traced blocks and removed after each), with its timed flush off;
callgrind dumps its counters at each block boundary (a call of getppid marks them). The traced
blocks' rows are then flushed once on their own: a flush's cost is reported apart (the tracer
writes one part file per ~2 s, so per step it is that cost over the steps of 2 s).

    .venv/bin/python bench/torch_instructions.py [--root CHECKOUT] [--steps 10]

--root runs the tracer of another checkout (e.g. an export of an earlier commit) with this script;
its hooks.install must take `modules` (commit ea6b6bc or later).
Needs valgrind; under valgrind a run takes ~10 minutes, most of it importing torch.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = ("untraced", "traced", "flush", "traced", "untraced")


def child(root: str, steps: int) -> None:
    """The measured process: marks each block's start and end with getppid()."""
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
    model = d.build(args, 0, cpu)
    tr = Tracer(tempfile.mkdtemp(prefix="torch-instructions-"), rank=0, world_size=1)
    tr.flush_interval_ns = tr.writer.flush_interval_ns = 10**18  # flushes only where this script says
    batches = [d.batch_for(args, 0, s, cpu) for s in range(steps)]
    for s in range(5):  # DDP's bucket rebuild
        d.train_step(*model, *batches[s % steps])
    with hooks.tracing(tr, [model[0]]):  # the tracer's bucket hooks, its first rows
        for s in range(5):
            d.train_step(*model, *batches[s % steps])
    tr.flush()
    for block in BLOCKS:
        if block == "flush":
            os.getppid()
            tr.flush()
            os.getppid()
            continue
        if block == "traced":
            hooks.install(tr, [model[0]])
        os.getppid()
        for s in range(steps):
            d.train_step(*model, *batches[s])
        os.getppid()
        if block == "traced":
            hooks.uninstall()
    tr.close(complete=True)
    shutil.rmtree(tr.writer.directory, ignore_errors=True)
    dist.destroy_process_group()


def totals(out: Path) -> list[int]:
    """Instruction totals of the dumps in order (dump k holds the counts since dump k-1)."""
    dumps = sorted(out.glob("cg.*.*"), key=lambda p: int(p.suffix[1:]))
    result = []
    for p in dumps:
        m = re.search(r"^totals: (\d+)", p.read_text(errors="replace"), re.M)
        result.append(int(m.group(1)) if m else 0)
    return result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", default=str(ROOT), help="checkout whose tracer runs (default: this one)")
    p.add_argument("--steps", type=int, default=10, help="steps per block")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.root, args.steps)
        return
    with tempfile.TemporaryDirectory(prefix="torch-instructions-") as work:
        out = Path(work)
        cmd = ["valgrind", "--tool=callgrind", "--dump-before=getppid", f"--callgrind-out-file={out}/cg.%p",
               sys.executable, __file__, "--child", "--root", args.root, "--steps", str(args.steps)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=""))
        if proc.returncode != 0:
            raise SystemExit(f"valgrind run failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        t = totals(out)
    # dumps: 1 start-up, 2 untraced, 3 (install), 4 traced, 5 (between), 6 flush, 7 (install), 8 traced, 9, 10 untraced
    if len(t) < 10:
        raise SystemExit(f"expected 10 counter dumps, got {len(t)}")
    n = args.steps
    untraced, traced = (t[1] + t[9]) / (2 * n), (t[3] + t[7]) / (2 * n)
    print(f"tracer of {args.root}: world size 1, gloo, ddp_train.py model, 2 x {n} steps per mode (untraced, traced, "
          f"traced, untraced), instructions per step (all threads):")
    print(f"  untraced {untraced:,.0f} (blocks {t[1] / n:,.0f} / {t[9] / n:,.0f})")
    print(f"  traced   {traced:,.0f} (blocks {t[3] / n:,.0f} / {t[7] / n:,.0f})")
    print(f"  tracer hooks per step: {traced - untraced:+,.0f} instructions")
    print(f"  one flush of the {n} traced steps' rows: {t[5]:,} instructions")


if __name__ == "__main__":
    main()
