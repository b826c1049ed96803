"""What does storing the clock refinement add to the traced run's compaction? (issue 25,
paradise.store.compaction)

Traces tests/charm_programs/pingpong.py HOPS hops on 2 PEs under charmrun with PE 1's clock skewed
(PARADISE_FAKE_CLOCK_SKEW, so the PEs measure offsets) and keeps the raw spools (charmrun started
directly: no launcher converts them). Then, in one process, side by side and --rounds times, each
on a fresh copy of the spools:
  * convert: paradise.format.compact.convert_all, the conversion alone (what compaction did before),
  * refine:  paradise.store.compaction.refinement_of_spools alone, what compaction adds to the
             conversion (the spools' metadata and message rows read, the refinement measured),
  * compact: paradise.store.compaction.compact, the conversion plus the refinement measured from
             the spools' message rows and stored in the files.
Prints wall and CPU seconds (getrusage, every thread) per design, the rows and the stored outcome,
and the ratios compact / convert and refine / convert.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/clock_compaction.py --work DIR [--hops 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pyarrow.parquet as pq  # noqa: E402

from paradise.format import META_KEY  # noqa: E402
from paradise.format.compact import convert_all  # noqa: E402
from paradise.store.compaction import compact, refinement_of_spools  # noqa: E402
from tracers.charm.launch import charm_command  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _spools(work: Path, hops: int) -> Path:
    """The raw spools of a skewed pingpong run (made once, kept)."""
    out = work / f"spools-{hops}"
    if any(out.glob("pe-*.rows")):
        return out
    shutil.rmtree(out, ignore_errors=True)
    env = dict(os.environ, PARADISE_TRACE=str(out), PARADISE_FAKE_CLOCK_SKEW="1:-50000000:400")
    proc = subprocess.run(charm_command(ROOT / "tests" / "charm_programs" / "pingpong.py", [str(hops)], 2), env=env,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0 or "RESULT ok" not in proc.stdout:
        sys.exit(f"pingpong failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="folder for the spools (kept) and their copies")
    ap.add_argument("--hops", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    spools = _spools(args.work, args.hops)
    size = sum(p.stat().st_size for p in spools.glob("pe-*.rows"))
    print(f"spools {spools}: {size / 2**20:.1f} MiB; load {os.getloadavg()[0]:.1f}")
    designs = {"convert": convert_all, "refine": lambda d: (0, 0) if refinement_of_spools(d) else (0, -1),
               "compact": compact}
    best: dict[str, tuple[float, float]] = {}
    for r in range(args.rounds):
        for name, fn in designs.items():
            copy = args.work / f"copy-{name}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(spools, copy)
            w, c = time.perf_counter(), _cpu()
            _, rows = fn(copy)
            wall, cpu = time.perf_counter() - w, _cpu() - c
            if name == "refine":
                what = "refinement measured, spools left" if rows == 0 else "nothing to refine"
            else:
                clock = json.loads(pq.read_schema(copy / "pe-00001.parquet").metadata[META_KEY])["clock"]
                ref = clock.get("refinement")
                what = f"{rows:,} rows, " + ("no refinement stored" if ref is None else f"stored {ref['status']}, "
                                              f"{ref['messages']:,} messages, {ref['backward_before']:,} backward before")
            print(f"round {r + 1} {name:8s} wall {wall:7.3f} s  cpu {cpu:7.3f} s  {what}")
            if name not in best or wall < best[name][0]:
                best[name] = (wall, cpu)
            shutil.rmtree(copy)
    for name in ("compact", "refine"):
        print(f"{name} / convert (best of {args.rounds}): wall {best[name][0] / best['convert'][0]:.2f}x, "
              f"cpu {best[name][1] / max(best['convert'][1], 1e-9):.2f}x")
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
