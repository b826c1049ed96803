"""`paradise tune` on the two examples of issue 27's goal: stencil2d with its heavy region and
particles (many small messages), each a real tune under charmrun, printed as the tune prints it.

    flock /tmp/paradise-bench.lock .venv/bin/python bench/tune_examples.py [--budget-min 12] [--only stencil2d]

Prints the load average before and after each tune and the tune's own summary (medians per
candidate, the paired t-test, what-if error per trial and per run as replayed and after calibration, the
speedup of the best hints over the plain program). The goal: at most 3 iterations to hints whose
runs are at least 1.3x faster, what-if error after calibration at most 10 % (20 % loaded).

particles runs 40 steps: under one steady load the per-run what-if error after calibration was
28.3 % with 10 steps (runs of 0.3-1 s) and 6.3 % with 40 (1.4-3.2 s) (docs/benchmarks.md, tune runs 14
and 16).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TUNES = {
    "stencil2d": ["--time-regex", r"elapsed_s=([0-9.]+)", "--check", r"max_err=\S+", "examples/stencil2d.py",
                  "--grid", "8", "8", "--block", "512", "--iters", "40", "--check-blocks", "2"],
    "particles": ["--time-regex", r"wall_s=([0-9.]+)", "--check", r"particles=\d+|out_of_order=\d+|check=\w+", "examples/particles.py",
                  "--particles", "8000", "--steps", "40", "--check"],
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget-min", type=float, default=12.0)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", choices=sorted(TUNES))
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="paradise-tune-bench-"))
    try:
        for name, args in TUNES.items():
            if a.only and name != a.only:
                continue
            cmd = [sys.executable, "-m", "paradise.cli.main", "tune", "charm", "--pes", "2", "-o", str(tmp / name),
                   "--rounds", str(a.rounds), "--budget-min", str(a.budget_min), *args]
            print(f"== {name}: paradise tune charm {' '.join(cmd[5:])}", flush=True)
            print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs",
                  flush=True)
            t0 = time.monotonic()
            proc = subprocess.run(cmd, cwd=ROOT, stderr=subprocess.STDOUT)
            print(f"exit {proc.returncode}; {time.monotonic() - t0:.0f} s; load average after: "
                  f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
