"""What does the clock refinement by the messages cost, at read time and once stored? (issue 25,
paradise.store.clockrefine, paradise.store.compaction)

On one trace (e.g. `paradise synth --kind charm --events 1e7 -o DIR`), in one process, side by side
and --rounds times each:
  * open:          paradise.store.open_trace of the trace as given (the synth trace has no clock
                   offsets): what every command pays before any query,
  * open-measured: open_trace of a copy whose files carry made-up ping offsets (PE p: p us at the
                   start, drift p ppm, error 1 ms; PE 0 none) and no stored refinement: a trace
                   written before the refinement was stored, measured at every open,
  * open-stored:   open_trace of the same copy with the refinement its writer would store
                   (clock.refinement, as paradise.store.compaction writes it): applied, not measured,
  * bounds:        clockrefine.message_bounds with the same correction, then clockrefine.solve over
                   its pairs: the refinement's whole cost, paid once at compaction when stored,
  * floor:         the send -> exec hash join on msg alone, counted (DuckDB, the fewest columns): what
                   any use of the messages pays (bench/scale.py's floor has it too).
The two copies are written once into --work (kept for the next run). Prints wall and CPU seconds
(getrusage, every thread) per design, rows and pairs, and the ratios.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/clock_refine.py TRACE_DIR --work DIR [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.parquet as pq  # noqa: E402

from paradise.format import META_KEY  # noqa: E402
from paradise.store import open_trace  # noqa: E402
from paradise.store.clock import clock_summary, file_corrections  # noqa: E402
from paradise.store.clockrefine import measure, message_bounds, solve  # noqa: E402

T_END = 1_000_000_000
"""Trace time of the made-up end measurement."""


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


def _clock(pe: int) -> dict:
    """The made-up ping offsets of PE pe: p us at 0, drift p ppm (the `corrections` of main), error 1 ms."""
    error = 1_000_000 if pe else 0
    entry = {"t_start": 0, "start_ns": 1_000 * pe, "t_end": T_END, "end_ns": 1_000 * pe + pe * T_END // 1_000_000,
             "error_ns": error}
    return {"method": "ping_min_rtt", "residual_ns": error, "offsets": {str(pe): entry}}


def _copies(trace, work: Path) -> tuple[Path, Path]:
    """(measured, stored): the trace's files with ping offsets, without and with the stored refinement."""
    measured, stored = work / "measured", work / "stored"
    if (stored / ".done").exists():
        return measured, stored
    for d in (measured, stored):
        d.mkdir(parents=True, exist_ok=True)
    metas = []
    for f, m in zip(trace.files, trace.file_metadata):
        table = pq.read_table(f)
        meta = json.loads(table.schema.metadata[META_KEY])
        meta["clock"] = _clock(m["pe"])
        metas.append(meta)
        pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), measured / f.name,
                       compression="zstd")
    files = sorted(measured.glob("*.parquet"))
    refinement = measure([str(f) for f in files], file_corrections(files, metas), clock_summary(files, metas))
    for f, meta in zip(files, metas):
        table = pq.read_table(f)
        meta["clock"]["refinement"] = refinement
        pq.write_table(table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()}), stored / f.name,
                       compression="zstd")
    (stored / ".done").write_text("")
    return measured, stored


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--work", type=Path, required=True, help="folder for the two copies with offsets (kept)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    trace = open_trace(args.trace)
    files = trace.sql_files()
    pes = [m.get("pe") for m in trace.file_metadata]
    corrections = {f: (0, 1_000 * (pe or 0), 1e-6 * (pe or 0)) for f, pe in zip(files, pes)}
    errors = {pe: 1_000_000 for pe in pes if pe}
    measured, stored = _copies(trace, args.work)

    def bounds():
        pairs = message_bounds(files, corrections)
        return pairs, solve(pairs, errors)

    designs = {"open": lambda: open_trace(args.trace), "open-measured": lambda: open_trace(measured),
               "open-stored": lambda: open_trace(stored), "bounds": bounds, "floor": lambda: _floor(files)}
    print(f"trace {args.trace}: {trace.num_rows:,} rows, {len(files)} files; load {os.getloadavg()[0]:.1f}")
    best: dict[str, tuple[float, float]] = {}
    for r in range(args.rounds):
        for name, fn in designs.items():
            out, wall, cpu = _timed(fn)
            if name == "bounds":
                what = (f"{len(out[0])} PE pairs, {sum(p['messages'] for p in out[0]):,} messages, "
                        f"{'consistent' if out[1] is not None else 'inconsistent'}")
            elif name == "floor":
                what = f"{out:,} messages"
            elif name.startswith("open-"):
                ref = out.metadata["clock"]["refinement"]
                what = f"{ref['status']}, {ref['messages']:,} messages, residual {ref.get('residual_ns')} ns"
            else:
                what = ""
            print(f"round {r + 1} {name:13s} wall {wall:7.3f} s  cpu {cpu:7.3f} s  {what}")
            if name not in best or wall < best[name][0]:
                best[name] = (wall, cpu)
    same = open_trace(measured).metadata["clock"] == open_trace(stored).metadata["clock"]
    print(f"open-measured and open-stored give the same clock: {same}")
    for a, b in (("open-measured", "open-stored"), ("open-stored", "open"), ("bounds", "floor"), ("bounds", "open")):
        print(f"{a} / {b} (best of {args.rounds}): wall {best[a][0] / best[b][0]:.2f}x, "
              f"cpu {best[a][1] / max(best[b][1], 1e-9):.2f}x")
    print(f"load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
