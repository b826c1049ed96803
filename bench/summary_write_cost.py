"""What writing each file's summary (paradise.format.summary) costs the writers: `paradise synth`,
`paradise import kineto` and the trace launchers, run by this tree and by another source tree
(--before DIR, e.g. `git archive REV | tar -x -C DIR` with the compiled tracer modules
tracers/*/_*.so copied in), both with this tree's interpreter and `python -P` (the working folder
never shadows the tree), each a process of its own (bench/scale.py's `run`: CPU from wait4), in
alternating rounds; prints the medians and the ratio now / before, and checks that synth and the
import wrote the same rows on both sides.

Inputs: a synth torch trace of --events rows (8 ranks), a Kineto trace made by replicating the
largest real HTA trace --replicas times (bench/import_vs_hta.py's generate), and two traced runs:
`paradise trace torch` of examples/ddp_train.py (2 ranks, --torch-steps steps; its spool conversion
writes the summaries, and the launcher prints how long that conversion took: `compacted N rows in X
s`, shown as "conversion s") and `paradise trace charm` of examples/stencil2d.py (2 PEs; the
launcher writes them when it fills the sends' receivers, after the conversion).

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/summary_write_cost.py --before DIR
     [--rounds 5] [--events 1e7] [--replicas 40] [--torch-steps 200] [--dir /tmp/paradise-summary-cost]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import pyarrow.parquet as pq  # noqa: E402
from import_vs_hta import REAL, generate  # noqa: E402
from scale import run  # noqa: E402

from paradise.memory import parse_size  # noqa: E402

COMPACTED = re.compile(r"compacted ([\d,]+) rows in ([\d.]+) s")
CLI = "import sys; from paradise.cli.main import main; sys.argv[0] = 'paradise'; main()"


def command(tree: Path, *args: str) -> list[str]:
    """`paradise ARGS` with `tree`'s paradise (PYTHONPATH set by env) and this interpreter."""
    return ["env", f"PYTHONPATH={tree}", sys.executable, "-P", "-c", CLI, *args]


def same_rows(a: Path, b: Path) -> bool:
    """Whether two outputs (a file, or a directory of them) hold the same files with equal rows."""
    fa = sorted(a.glob("*.parquet")) if a.is_dir() else [a]
    fb = sorted(b.glob("*.parquet")) if b.is_dir() else [b]
    return [f.name for f in fa] == [f.name for f in fb] and all(
        pq.read_table(x).equals(pq.read_table(y)) for x, y in zip(fa, fb))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--events", default="1e7")
    ap.add_argument("--replicas", type=int, default=40)
    ap.add_argument("--torch-steps", type=int, default=200)
    ap.add_argument("--dir", type=Path, default=Path("/tmp/paradise-summary-cost"))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    src = max(REAL.rglob("*.json.gz"), key=lambda p: p.stat().st_size)
    kineto = args.dir / f"kineto-x{args.replicas}.json"
    if not kineto.exists():
        generate(src, kineto, args.replicas)
    print(f"kineto input: {src.name} x{args.replicas} ({kineto.stat().st_size / 2**20:,.0f} MiB); "
          f"synth: torch {args.events} rows, 8 ranks; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    trees = {"before": args.before.resolve(), "now": ROOT}
    jobs = {
        "synth": lambda out: ("synth", "-o", str(out), "--kind", "torch", "--events", args.events, "--pes", "8",
                              "--imbalance", "1.5", "--seed", "7"),
        "import kineto": lambda out: ("import", "kineto", str(kineto), "-o", str(out)),
        "trace torch": lambda out: ("trace", "torch", "--nproc", "2", "-o", str(out),
                                    str(ROOT / "examples" / "ddp_train.py"), "--steps", str(args.torch_steps)),
        "trace charm": lambda out: ("trace", "charm", "-p", "2", "-o", str(out), str(ROOT / "examples" / "stencil2d.py")),
    }
    outputs = {"synth": "t", "import kineto": "t.parquet"}  # the traced runs' rows differ run to run
    conversion: dict[str, list[float]] = {}
    cap = parse_size("12GiB")
    cpu: dict[tuple[str, str], list[float]] = {}
    for i in range(args.rounds):
        for job, argv in jobs.items():
            for side in (("before", "now") if i % 2 == 0 else ("now", "before")):
                out = args.dir / f"{job.replace(' ', '-')}-{side}" / outputs.get(job, "t")
                shutil.rmtree(out.parent, ignore_errors=True)
                out.parent.mkdir()
                r = run(command(trees[side], *argv(out)), cap, job)
                if r.err or r.killed:
                    sys.exit(f"{job} ({side}): {r.err or 'killed'}")
                cpu.setdefault((job, side), []).append(r.cpu_s)
                m = COMPACTED.search((r.out + r.stderr).decode(errors="replace"))
                conv = f"  conversion {float(m.group(2)):.3f} s ({m.group(1)} rows)" if m else ""
                if m:
                    conversion.setdefault((job, side), []).append(float(m.group(2)))
                print(f"  round {i + 1}  {job:14s} {side:6s} CPU {r.cpu_s:6.2f} s  wall {r.wall_s:6.2f} s{conv}",
                      flush=True)
    for job in jobs:
        b, n = statistics.median(cpu[(job, "before")]), statistics.median(cpu[(job, "now")])
        line = f"{job}: median CPU before {b:.2f} s, now {n:.2f} s ({n / b:.2f}x)"
        if job in outputs:
            stem = job.replace(" ", "-")
            same = same_rows(args.dir / f"{stem}-before" / outputs[job], args.dir / f"{stem}-now" / outputs[job])
            line += f"; rows {'same' if same else 'DIFFER'}"
        if (job, "now") in conversion and (job, "before") in conversion:
            cb, cn = statistics.median(conversion[(job, "before")]), statistics.median(conversion[(job, "now")])
            line += f"; conversion before {cb:.3f} s, now {cn:.3f} s"
        print(line)
    print(f"load at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
