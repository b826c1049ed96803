"""What paradise.tuning's opt-in knobs change, measured side by side: each command runs in fresh
processes, alternating without and with PARADISE_TUNING=<knob>, and the medians of wall time, CPU
time, peak RSS and minor page faults (the child's own, from wait4) are printed with their ratios.

    flock /tmp/paradise-bench.lock python bench/tuning.py [--reps 5] [--events 2e6]

* malloc: `paradise analyze --json` of a synthetic charm trace (paradise synth, cached in .bench/);
* arrow-pool: `paradise import kineto` of HTA's ns_resolution_trace rank-0 file (../shared/data/real)
  or, without it, of the small sampled_rank-0 trace.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".bench" / "tuning"
PARADISE = str(Path(sys.executable).with_name("paradise"))
REAL = ROOT.parent / "shared" / "data" / "real" / "hta" / "tests" / "data"


def run(cmd: list[str], env: dict[str, str]) -> dict[str, float]:
    """One fresh process: wall s, CPU s (user + system), peak RSS MiB, minor page faults."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "rss_mib": ru.ru_maxrss / 1024,
            "minflt_k": ru.ru_minflt / 1000}


def compare(label: str, cmd: list[str], knob: str, reps: int) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("PARADISE_TUNING", "ARROW_DEFAULT_MEMORY_POOL")}
    envs = {"off": base, "on": {**base, "PARADISE_TUNING": knob}}
    runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    run(cmd, base)  # warm the page cache
    for _ in range(reps):
        for side in ("off", "on"):  # interleaved: both sides see the same machine
            runs[side].append(run(cmd, envs[side]))
    print(f"{label}: PARADISE_TUNING={knob}, medians of {reps} interleaved runs")
    print(f"  {'':10} {'off':>10} {'on':>10} {'on/off':>8}")
    for key in ("wall_s", "cpu_s", "rss_mib", "minflt_k"):
        off = statistics.median(r[key] for r in runs["off"])
        on = statistics.median(r[key] for r in runs["on"])
        print(f"  {key:10} {off:10.2f} {on:10.2f} {on / off if off else float('nan'):8.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--events", default="2e6")
    args = ap.parse_args()
    trace = CACHE / f"synth-{args.events}"
    if not trace.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run([PARADISE, "synth", "-o", str(trace), "--events", args.events, "--pes", "8"], check=True,
                       stdout=subprocess.DEVNULL)
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    compare(f"paradise analyze --json ({args.events} events, 8 PEs)", [PARADISE, "analyze", str(trace), "--json"],
            "malloc", args.reps)
    big = sorted((REAL / "ns_resolution_trace").glob("rank-0*.json.gz"))
    src = big[0] if big else REAL / "trace_filter" / "sampled_rank-0.json.gz"
    with tempfile.TemporaryDirectory() as tmp:
        compare(f"paradise import kineto ({src.name}, {src.stat().st_size / 1e6:.1f} MB gz)",
                [PARADISE, "import", "kineto", str(src), "-o", str(Path(tmp) / "k.parquet"), "--force"],
                "arrow-pool", args.reps)


if __name__ == "__main__":
    main()
