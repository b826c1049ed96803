"""Instructions the PyTorch tracer adds per training step, by part, counted by valgrind's callgrind.

CPU time per step on a shared machine moves by more than the tracer costs (bench/torch_overhead.py's
noise floor is ~100 us); instruction counts do not depend on the load. One process (world size 1,
gloo, examples/ddp_train.py's model and train_step, one model instance) runs 10-step blocks in a
mirrored order (untraced, traced, hooks, clock, clock, hooks, traced, untraced: the drift between
blocks cancels), with the tracer's timed flush off; callgrind dumps its counters at each block
boundary (a call of getppid marks them); a full garbage collection before each block (not counted) starts
every block from the same collector state. `traced` is the tracer as it runs; `hooks` the same hooks
installed over a tracer whose clock returns 0 and whose recording methods do nothing (what it costs
torch and Python to call the hooks at all); `clock` that tracer with its real clock. So: hook
calls = hooks - untraced, clock reads = clock - hooks, row keeping = traced - clock. The traced
blocks' rows are then flushed once on their own: a flush's cost is reported apart (the tracer
writes one part file per ~2 s, so per step it is that cost over the steps of 2 s).

    .venv/bin/python bench/torch_instructions.py [--root CHECKOUT] [--steps 10]

--root runs the tracer of another checkout (e.g. an export of an earlier commit) with this script;
its hooks.install must take `modules` (commit ea6b6bc or later).
Needs valgrind; under valgrind a run takes ~10 minutes, most of it importing torch.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from torch_one_rank import warmed_up, without_timed_flush

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = ("untraced", "traced", "hooks", "clock", "flush", "clock", "hooks", "traced", "untraced")


def _variants() -> dict:
    """The tracer classes of the `hooks` and `clock` blocks (see the module doc)."""
    from tracers.torch.tracer import Tracer

    class HooksOnly(Tracer):
        def now(self) -> int:
            return 0

        def compute(self, name, t0, t1) -> None:  # noqa: ANN001
            pass

        def bucket(self, *args) -> None:  # noqa: ANN002
            pass

        def buffer(self, row) -> None:  # noqa: ANN001
            pass

        def end_step(self, n, t0, t1) -> None:  # noqa: ANN001
            self._counter += 1
            self.step = n + 1
            self.step_start = None
            self.forward_seen = False
            self.fwd_end = None

    class ClockOnly(HooksOnly):
        now = Tracer.now

    return {"hooks": HooksOnly, "clock": ClockOnly}


def child(root: str, steps: int) -> None:
    """The measured process: marks each block's start and end with getppid()."""
    d, model, batches = warmed_up(root, steps)
    import torch.distributed as dist

    from tracers.torch import hooks
    from tracers.torch.tracer import Tracer

    dirs = {name: tempfile.mkdtemp(prefix="torch-instructions-") for name in ("traced", "hooks", "clock")}
    tr = Tracer(dirs["traced"], rank=0, world_size=1)
    variants = {name: cls(dirs[name], rank=0, world_size=1) for name, cls in _variants().items()}
    tracers = {"traced": tr, **variants}
    for t in tracers.values():  # flushes only where this script says
        without_timed_flush(t)
    for t in tracers.values():
        with hooks.tracing(t, [model[0]]):  # the tracer's bucket hooks, its first rows
            for s in range(5):
                d.train_step(*model, *batches[s % steps])
        t.flush()
    for block in BLOCKS:
        if block == "flush":
            os.getppid()
            tr.flush()
            os.getppid()
            continue
        if block in tracers:
            hooks.install(tracers[block], [model[0]])
        gc.collect()  # every block starts from the same collector state (outside the counted region)
        os.getppid()
        for s in range(steps):
            d.train_step(*model, *batches[s])
        os.getppid()
        if block in tracers:
            hooks.uninstall()
    for t in tracers.values():
        t.close(complete=True)
    for folder in dirs.values():  # the tracer's writer (a spool now) keeps no directory attribute
        shutil.rmtree(folder, ignore_errors=True)
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
    # numbered dumps: t[0] start-up, then per block k its own (t[2k + 1]) and the gap after it
    if len(t) < 2 * len(BLOCKS):
        raise SystemExit(f"expected {2 * len(BLOCKS)} counter dumps, got {len(t)}")
    n = args.steps
    per: dict[str, list[float]] = {}
    for k, block in enumerate(BLOCKS):
        per.setdefault(block, []).append(t[2 * k + 1] / (1 if block == "flush" else n))
    mean = {b: sum(v) / len(v) for b, v in per.items()}
    print(f"tracer of {args.root}: world size 1, gloo, ddp_train.py model, {n}-step blocks {', '.join(BLOCKS)}; "
          "instructions per step (all threads), each mode's blocks and their mean:")
    for block in ("untraced", "hooks", "clock", "traced"):
        print(f"  {block:8s} {mean[block]:,.0f} (blocks {' / '.join(f'{v:,.0f}' for v in per[block])})")
    print(f"  tracer per step: {mean['traced'] - mean['untraced']:+,.0f} instructions = hook calls "
          f"{mean['hooks'] - mean['untraced']:+,.0f} + clock reads {mean['clock'] - mean['hooks']:+,.0f} "
          f"+ row keeping {mean['traced'] - mean['clock']:+,.0f}")
    print(f"  one flush of the {n} traced steps' rows: {mean['flush']:,.0f} instructions")

if __name__ == "__main__":
    main()
