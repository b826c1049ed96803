"""What paradise.tuning's opt-in knobs change, measured side by side: each command runs in fresh
processes, alternating without and with PARADISE_TUNING=<knob>, and the medians of wall time, CPU
time, peak RSS and minor page faults (the child's own, from wait4) are printed with their ratios.

    flock /tmp/paradise-bench.lock python bench/tuning.py [--reps 5] [--events 2e6]
        [--charm-events 1e7,1e8] [--memory-limit 2GiB] [--parts analyze,import,charm] [--dir DIR]

* analyze: malloc, `paradise analyze --json` of a synthetic charm trace (paradise synth, 8 PEs,
  cached in .bench/);
* import: arrow-pool, `paradise import kineto` of HTA's ns_resolution_trace rank-0 file
  (../shared/data/real) or, without it, of the small sampled_rank-0 trace;
* charm: malloc and arrow-pool together, `paradise analyze --json` (the default budget, or
  --memory-limit) of bench/scale.py's charm traces (its `generate`), one per --charm-events size,
  made under --dir and reused from there.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".bench" / "tuning"
PARADISE = str(Path(sys.executable).with_name("paradise"))
REAL = ROOT.parent / "shared" / "data" / "real" / "hta" / "tests" / "data"


def run(cmd: list[str], env: dict[str, str], keep_output: bool = False) -> dict[str, Any]:
    """One fresh process: wall s, CPU s (user + system, and each), peak RSS MiB, minor page faults, and
    the sha256 of its standard output (with `keep_output`, the output too)."""
    t = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as errf:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=errf)
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        out.seek(0)
        output = out.read()
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{err[-2000:]}")
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
            "rss_mib": ru.ru_maxrss / 1024, "minflt_k": ru.ru_minflt / 1000,
            "stdout": hashlib.sha256(output).hexdigest(), **({"output": output} if keep_output else {})}


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
    for key in ("wall_s", "cpu_s", "user_s", "sys_s", "rss_mib", "minflt_k"):
        off = statistics.median(r[key] for r in runs["off"])
        on = statistics.median(r[key] for r in runs["on"])
        print(f"  {key:10} {off:10.2f} {on:10.2f} {on / off if off else float('nan'):8.3f}")
    outputs = {r["stdout"] for side in runs.values() for r in side}
    print(f"  standard output: {'the same in every run' if len(outputs) == 1 else f'{len(outputs)} different'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--events", default="2e6")
    ap.add_argument("--charm-events", default="1e7", help="sizes of the charm part's traces, comma-separated")
    ap.add_argument("--memory-limit", default=None, help="the charm part's analyze --memory-limit (default: none given)")
    ap.add_argument("--parts", default="analyze,import,charm")
    ap.add_argument("--dir", type=Path, default=CACHE, help="where the charm part's traces are made")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    if "analyze" in parts:
        trace = CACHE / f"synth-{args.events}"
        if not (trace / "synth-truth.json").exists():  # made once; a trace left half-written is made again
            CACHE.mkdir(parents=True, exist_ok=True)
            subprocess.run([PARADISE, "synth", "-o", str(trace), "--events", args.events, "--pes", "8", "--force"],
                           check=True, stdout=subprocess.DEVNULL)
        compare(f"paradise analyze --json ({args.events} events, 8 PEs)", [PARADISE, "analyze", str(trace), "--json"],
                "malloc", args.reps)
    if "import" in parts:
        big = sorted((REAL / "ns_resolution_trace").glob("rank-0*.json.gz"))
        src = big[0] if big else REAL / "trace_filter" / "sampled_rank-0.json.gz"
        with tempfile.TemporaryDirectory() as tmp:
            compare(f"paradise import kineto ({src.name}, {src.stat().st_size / 1e6:.1f} MB gz)",
                    [PARADISE, "import", "kineto", str(src), "-o", str(Path(tmp) / "k.parquet"), "--force"],
                    "arrow-pool", args.reps)
    if "charm" in parts:
        sys.path.insert(0, str(ROOT / "bench"))
        import scale  # the same traces as bench/scale.py's (a 2-D grid on 64 PEs, imbalance 1.5)

        scale.REUSE = True
        args.dir.mkdir(parents=True, exist_ok=True)
        for events in args.charm_events.split(","):
            trace = scale.generate("charm", int(float(events)), 64, args.dir)
            budget = ["--memory-limit", args.memory_limit] if args.memory_limit else []
            compare(f"paradise analyze --json{''.join(' ' + b for b in budget)} (synth charm, {float(events):.0e} rows, "
                    f"64 PEs{'' if budget else ', default budget'})",
                    [PARADISE, "analyze", str(trace), "--json", *budget], "malloc,arrow-pool", args.reps)


if __name__ == "__main__":
    main()
