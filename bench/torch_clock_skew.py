"""How close does `paradise trace torch` measure a clock skew it is given? (issue 25, tracers/torch/clock.py)

Runs tests/torch_programs/clock_ddp.py under `paradise trace torch --nproc 2` --runs times with rank
1's tracer clock skewed (PARADISE_FAKE_CLOCK_SKEW: 50 ms behind, 400 ppm drift, as the test) and
prints, per run and measurement (start, end), the measured offset minus the injected one and the
error bound the trace states; then per build the largest miss, the root mean square and how many
misses pass the test's 20 us. Each --paradise build (a `paradise` executable, e.g. another
checkout's .venv/bin/paradise) runs in turn within each round, so all of them see the same machine.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/torch_clock_skew.py [--runs 10]
     [--paradise .venv/bin/paradise OTHER/.venv/bin/paradise]
"""
from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradise.store import open_trace  # noqa: E402

PROGRAM = ROOT / "tests" / "torch_programs" / "clock_ddp.py"
SKEW_NS, DRIFT_PPM = -50_000_000, 400.0
TOLERANCE_NS = 20_000


def injected(t_ns: int) -> float:
    """What must be added to rank 1's trace time t to read rank 0's (tests/integration/test_torch_clock.py)."""
    drift = DRIFT_PPM * 1e-6
    return -(SKEW_NS + drift * (t_ns - SKEW_NS) / (1 + drift))


def one_run(paradise: str, out: Path) -> tuple[float | None, float | None, int]:
    """(start miss, end miss, stated error) in ns of one traced run."""
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, PARADISE_FAKE_CLOCK_SKEW=f"1:{SKEW_NS}:{DRIFT_PPM}")
    proc = subprocess.run([paradise, "trace", "torch", "--nproc", "2", "-o", str(out), str(PROGRAM)],
                          capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode:
        sys.exit(f"{paradise}: exit {proc.returncode}: {proc.stderr[-500:]}")
    m = {f["pe"]: f for f in open_trace(out).file_metadata}[1]["clock"]["offsets"]["1"]
    start = m["start_ns"] - injected(m["t_start"])
    end = None if m["t_end"] is None else m["end_ns"] - injected(m["t_end"])
    return start, end, m["error_ns"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="traced runs per build")
    ap.add_argument("--paradise", nargs="+", default=[str(ROOT / ".venv" / "bin" / "paradise")],
                    help="paradise executables to compare, run in turn")
    args = ap.parse_args()
    misses: dict[str, list[float]] = {p: [] for p in args.paradise}
    print(f"skew {SKEW_NS / 1e6:+.0f} ms, drift {DRIFT_PPM:.0f} ppm on rank 1; miss = measured - injected offset")
    with tempfile.TemporaryDirectory(prefix="paradise-clock-") as tmp:
        for k in range(args.runs):
            for i, p in enumerate(args.paradise):
                start, end, err = one_run(p, Path(tmp) / f"t{i}")
                misses[p] += [m for m in (start, end) if m is not None]
                end_text = "   (none)" if end is None else f"{end / 1e3:+8.1f}"
                print(f"run {k:2d} build {i}: start {start / 1e3:+8.1f} us  end {end_text} us  stated error "
                      f"{err / 1e3:6.1f} us", flush=True)
    for i, p in enumerate(args.paradise):
        m = misses[p]
        over = sum(abs(x) > TOLERANCE_NS for x in m)
        rms = math.sqrt(sum(x * x for x in m) / len(m))
        print(f"build {i} ({p}): {len(m)} measurements, largest miss {max(abs(x) for x in m) / 1e3:.1f} us, "
              f"rms {rms / 1e3:.1f} us, mean {sum(m) / len(m) / 1e3:+.1f} us, over 20 us: {over}")


if __name__ == "__main__":
    main()
