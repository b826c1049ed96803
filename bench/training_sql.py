"""Training queries (paradise/sql/) against their earlier forms (bench/sql/), side by side in one engine over
one trace: training_breakdown against its islands form, training_collective_arrivals against its window
form. CPU seconds of each (the process's, every thread), alternating, after training_rows is kept (the
engine's table of the training rows, built before any runs); the rows of both forms must be the same.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/training_sql.py TRACE [--rounds 3]
     [--queries training_breakdown,training_collective_arrivals]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradise.engines import load_sql  # noqa: E402
from paradise.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from paradise.store import open_trace  # noqa: E402

EARLIER = {"training_breakdown": "training_breakdown_islands", "training_collective_arrivals": "training_collective_arrivals_window"}
"""Each query -> its earlier form in bench/sql/."""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", type=Path)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--queries", default=",".join(EARLIER))
    args = p.parse_args()
    with DuckDBEngine(open_trace(args.trace)) as eng:
        n = eng.sql("SELECT count(*) AS n FROM training_rows").column("n")[0].as_py()
        print(f"{args.trace}: {n:,} training rows; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
        for query in args.queries.split(","):
            earlier = EARLIER[query]
            designs = {earlier: (ROOT / "bench" / "sql" / f"{earlier}.sql").read_text(), query: load_sql(query)}
            cpu: dict[str, list[float]] = {k: [] for k in designs}
            rows: dict[str, list] = {}
            for r in range(args.rounds):
                for name in (list(designs) if r % 2 == 0 else list(reversed(designs))):
                    t = _cpu()
                    rows[name] = eng.sql(designs[name]).to_pylist()
                    cpu[name].append(_cpu() - t)
                    print(f"  round {r + 1}  {name:36s} CPU {cpu[name][-1]:6.2f} s  {len(rows[name]):,} rows", flush=True)
            a, b = (statistics.median(cpu[k]) for k in designs)
            same = rows[earlier] == rows[query]
            print(f"  median CPU: {earlier} {a:.2f} s, {query} (shipped) {b:.2f} s ({b / a:.2f}x); "
                  f"rows: {'same' if same else 'DIFFERENT'}", flush=True)


if __name__ == "__main__":
    main()
