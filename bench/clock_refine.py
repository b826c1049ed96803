"""What does the clock refinement by the messages cost at read time? (issue 25, paradise.store.clockrefine)

On one trace (e.g. `paradise synth --kind charm --events 1e7 -o DIR`), in one process, side by side
and --rounds times each:
  * open:     paradise.store.open_trace as shipped (footers; the synth trace has no clock offsets,
              so no refinement): what every command pays before any query,
  * bounds:   clockrefine.message_bounds with a made-up linear correction on every file (PE p:
              offset p us, drift p ppm), then clockrefine.solve over its pairs: the refinement's
              whole cost on a trace whose PEs measured offsets,
  * floor:    the send -> exec hash join on msg alone, counted (DuckDB, the fewest columns): what
              any use of the messages pays (bench/scale.py's floor has it too).
Prints wall and CPU seconds (getrusage, every thread) per design, rows and pairs, and the ratios
bounds / floor and bounds / open.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/clock_refine.py TRACE_DIR [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paradise.store import open_trace  # noqa: E402
from paradise.store.clockrefine import message_bounds, solve  # noqa: E402


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fn):
    w, c = time.perf_counter(), _cpu()
    out = fn()
    return out, time.perf_counter() - w, _cpu() - c


def _floor(files: list[str]) -> int:
    import duckdb

    con = duckdb.connect(":memory:")
    try:
        return con.execute(
            "SELECT count(*) FROM (SELECT pe, msg FROM read_parquet($f, union_by_name = true) WHERE kind = 'send') s "
            "JOIN (SELECT pe, msg FROM read_parquet($f, union_by_name = true) WHERE kind = 'exec') e "
            "ON e.msg = s.msg AND e.pe <> s.pe", {"f": files}).fetchone()[0]
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    trace = open_trace(args.trace)
    files = trace.sql_files()
    pes = [m.get("pe") for m in trace.file_metadata]
    corrections = {f: (0, 1_000 * (pe or 0), 1e-6 * (pe or 0)) for f, pe in zip(files, pes)}
    errors = {pe: 1_000_000 for pe in pes if pe}

    def bounds():
        pairs = message_bounds(files, corrections)
        return pairs, solve(pairs, errors)

    designs = {"open": lambda: open_trace(args.trace), "bounds": bounds, "floor": lambda: _floor(files)}
    print(f"trace {args.trace}: {trace.num_rows:,} rows, {len(files)} files; load {os.getloadavg()[0]:.1f}")
    best: dict[str, tuple[float, float]] = {}
    for r in range(args.rounds):
        for name, fn in designs.items():
            out, wall, cpu = _timed(fn)
            what = (f"{len(out[0])} PE pairs, {sum(p['messages'] for p in out[0]):,} messages, "
                    f"{'consistent' if out[1] is not None else 'inconsistent'}") if name == "bounds" else \
                (f"{out:,} messages" if name == "floor" else "")
            print(f"round {r + 1} {name:7s} wall {wall:7.3f} s  cpu {cpu:7.3f} s  {what}")
            if name not in best or wall < best[name][0]:
                best[name] = (wall, cpu)
    for a, b in (("bounds", "floor"), ("bounds", "open")):
        print(f"{a} / {b} (best of {args.rounds}): wall {best[a][0] / best[b][0]:.2f}x, "
              f"cpu {best[a][1] / max(best[b][1], 1e-9):.2f}x")
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
