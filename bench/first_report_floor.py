"""What the first report (`analyze --only overview`) costs part by part, against bench/scale.py's scan.

In one process, on one trace, each query run alone over the trace's `events` view (DuckDB 2.0, the
engine's settings), best CPU seconds (every thread, getrusage) of `--rounds` runs:
  * scan:            bench/scale.py's scan SQL (every column any analysis reads, with its count DISTINCTs),
  * bare read:       the ten columns the first report reads, each summed or counted (no grouping),
  * t0, t1:          the two time columns alone (most of the trace's bytes),
  * group keys:      overview_pe's grouping alone (count per kind, pe, name, coll, cat),
  * overview_pe:     the shipped hash aggregate (paradise/sql/overview_pe.sql), first read,
  * its aggregates by pe alone: overview_pe's aggregate expressions grouped by the PE only (no
                     string keys: what grouping on kind, name, coll and cat adds to the aggregates),
  * interval stream: the busy sweep's rows (paradise/sql/overview_pe_time.sql) streamed to Arrow, dropped,
  * stream + sweep:  the same rows swept (paradise.engines.busy), second read,
  * one read (windows): overview_pe's aggregate and the busy union in ONE query, the sweep as DuckDB
                     streaming windows (running maximum end, lag) with ends offset per PE
                     (pe * span + t - t_min, int64); its busy totals are checked against the sweep's.
The floor of the two-read design is `overview_pe + stream + sweep`; of any design, the bare read.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/first_report_floor.py TRACE_DIR [--rounds 3]
(a trace without clock corrections or pieces, e.g. the bench's synth torch trace).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scale import SCAN_SQL, trace_files  # noqa: E402

from paradise.engines import busy  # noqa: E402
from paradise.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from paradise.store import open_trace  # noqa: E402

BARE = """SELECT count(kind), sum(pe), count(name), count(coll), count(cat), sum(peer_pe), sum(bytes),
    sum(t0), sum(t1), sum(active) FROM events"""
KEYS = "SELECT kind, pe, name, coll, cat, count(*) FROM events GROUP BY ALL"
DUR = "CASE WHEN kind = 'exec' THEN coalesce(active, t1 - t0) ELSE coalesce(t1, t0) - t0 END"
AGGS_BY_PE = f"""SELECT pe, count(*) AS rows, min(t0) AS t_first, max(coalesce(t1, t0)) AS t_last,
    sum({DUR})::BIGINT AS dur_ns, max({DUR}) AS max_ns, sum(bytes)::BIGINT AS bytes, min(bytes) AS min_bytes,
    max(bytes) AS max_bytes FROM events GROUP BY pe"""
WINDOWS = """
WITH a AS (SELECT kind, pe, name, coll, cat, peer_pe, bytes, t0, t1, active, {k0} AS k0,
             CASE WHEN t1 IS NOT NULL AND kind IN ('exec', 'piece', 'phase') THEN {k1} END AS kb,
             CASE WHEN t1 IS NOT NULL AND kind IN ('exec', 'piece', 'phase', 'idle') THEN {k1} END AS ka
           FROM events),
     b AS (SELECT *, max(kb) OVER (ROWS UNBOUNDED PRECEDING) AS mb, max(ka) OVER (ROWS UNBOUNDED PRECEDING) AS ma,
                  lag(k0) OVER () AS lk FROM a),
     c AS (SELECT *, lag(mb) OVER () AS pb, lag(ma) OVER () AS pa FROM b)
SELECT kind, pe, name, coll, cat, CASE WHEN kind = 'send' THEN peer_pe END AS peer_pe,
    CASE WHEN kind = 'send' THEN CAST(floor(log2(greatest(coalesce(bytes, 0), 1))) AS INTEGER) END AS size_log2,
    count(*) AS rows, min(t0) AS t_first, max(coalesce(t1, t0)) AS t_last,
    sum(CASE WHEN kind = 'exec' THEN coalesce(active, t1 - t0) ELSE coalesce(t1, t0) - t0 END)::BIGINT AS dur_ns,
    max(CASE WHEN kind = 'exec' THEN coalesce(active, t1 - t0) ELSE coalesce(t1, t0) - t0 END) AS max_ns,
    sum(bytes)::BIGINT AS bytes, min(bytes) AS min_bytes, max(bytes) AS max_bytes,
    sum(greatest(kb - greatest(k0, coalesce(pb, k0)), 0))::BIGINT AS busy_ns,
    sum(greatest(ka - greatest(k0, coalesce(pa, k0)), 0))::BIGINT AS covered_ns,
    count(CASE WHEN k0 < lk THEN 1 END) AS unordered
FROM c GROUP BY ALL"""
"""One read: the busy and covered unions as each row's part past its PE's running maximum end."""


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def best(fn: Callable[[], Any], rounds: int) -> tuple[float, Any]:
    """The least CPU seconds of `rounds` calls, and the last call's result."""
    times, out = [], None
    for _ in range(rounds):
        c0 = cpu()
        out = fn()
        times.append(cpu() - c0)
    return min(times), out


def streamed(eng: DuckDBEngine) -> int:
    return sum(len(b) for b in eng.batches("overview_pe_time", intervals="intervals"))


def windows_sql(eng: DuckDBEngine) -> str:
    """WINDOWS with each PE's times offset past the last PE's (int64: refuses a trace that overflows)."""
    lo, hi, top = eng.sql("SELECT min(t0), max(coalesce(t1, t0)), max(pe) FROM events").to_pylist()[0].values()
    span = hi - lo + 1
    if (top + 1) * span >= 2**62:
        raise SystemExit("the trace's PEs x span overflow int64 offsets")
    return WINDOWS.format(k0=f"pe * {span} + (t0 - {lo})", k1=f"pe * {span} + (t1 - {lo})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    trace = open_trace(args.trace)
    if trace.corrections or trace.may_hold_pieces:
        raise SystemExit(f"{args.trace}: a trace without clock corrections or pieces, please")
    files = trace_files(Path(args.trace))
    with DuckDBEngine(trace) as eng:
        n = eng.sql("SELECT count(*) AS n FROM events").column("n")[0].as_py()
        print(f"{args.trace}: {n:,} rows, {len(files)} files; best CPU s of {args.rounds}; "
              f"load {os.getloadavg()[0]:.1f}")
        parts = [
            ("scan (bench/scale.py)", lambda: eng.sql(SCAN_SQL, files=files)),
            ("bare read, 10 columns", lambda: eng.sql(BARE)),
            ("t0, t1 alone", lambda: eng.sql("SELECT sum(t0), sum(t1) FROM events")),
            ("group keys alone", lambda: eng.sql(KEYS)),
            ("overview_pe", lambda: eng.query("overview_pe")),
            ("its aggregates by pe alone", lambda: eng.sql(AGGS_BY_PE)),
            ("interval stream", lambda: streamed(eng)),
            ("stream + sweep", lambda: busy._swept(eng, "intervals")),
        ]
        got: dict[str, float] = {}
        for label, fn in parts:
            got[label], out = best(fn, args.rounds)
            if label == "stream + sweep":
                swept = out
            print(f"  {label:28s} {got[label]:7.2f}  {got[label] / got['scan (bench/scale.py)']:5.2f}x the scan")
        two = got["overview_pe"] + got["stream + sweep"]
        print(f"  {'two reads (overview_pe + stream + sweep)':28s} {two:7.2f}  "
              f"{two / got['scan (bench/scale.py)']:5.2f}x the scan")
        sql = windows_sql(eng)
        cpu_w, rows = best(lambda: eng.sql(sql).to_pylist(), args.rounds)
        by_pe: dict[int, list[int]] = {}
        for r in rows:
            t = by_pe.setdefault(r["pe"], [0, 0, 0])
            t[0], t[1], t[2] = t[0] + r["busy_ns"], t[1] + r["covered_ns"], t[2] + r["unordered"]
        same = all(by_pe[p][:2] == swept[p][:2] for p in swept) and not sum(t[2] for t in by_pe.values())
        print(f"  {'one read (windows)':28s} {cpu_w:7.2f}  {cpu_w / got['scan (bench/scale.py)']:5.2f}x the scan"
              f"  busy and covered as the sweep's: {'same' if same else 'DIFFERENT'}")
    print(f"load at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
