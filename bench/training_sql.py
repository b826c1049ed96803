"""Training queries (paradise/sql/) against their earlier forms (bench/sql/), side by side in one engine over
one trace: training_breakdown against its islands form, training_collective_arrivals against its window
form, and events_training (the engine's kept table of the training rows, written here as a table of
its own) against its wide form. CPU seconds of each (the process's, every thread), alternating, after
training_rows is kept (built before any runs); the rows of both forms must be the same (for
events_training: the same rows over the columns both have).

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

EARLIER = {"training_breakdown": "training_breakdown_islands", "training_collective_arrivals": "training_collective_arrivals_window",
           "events_training": "events_training_wide"}
"""Each query -> its earlier form in bench/sql/."""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _run(eng: DuckDBEngine, query: str, name: str, sql: str) -> tuple[list, int]:
    """(the query's rows, their count); events_training is written as a table named `name` (as the
    engine keeps it) and its rows are left there ([])."""
    if query != "events_training":
        rows = eng.sql(sql).to_pylist()
        return rows, len(rows)
    eng.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")
    return [], eng.sql(f"SELECT count(*) AS n FROM {name}").column("n")[0].as_py()


def _same(eng: DuckDBEngine, query: str, earlier: str, rows: dict[str, list]) -> bool:
    """Both forms' rows equal (events_training: its two tables, over the columns of the shipped one)."""
    if query != "events_training":
        return rows[earlier] == rows[query]
    cols = ", ".join(f'"{c}"' for c in eng.sql(f"SELECT * FROM {query} LIMIT 0").column_names)
    diff = eng.sql(f"SELECT count(*) AS n FROM ((SELECT {cols} FROM {earlier} EXCEPT ALL SELECT {cols} FROM {query}) "
                   f"UNION ALL (SELECT {cols} FROM {query} EXCEPT ALL SELECT {cols} FROM {earlier}))")
    return diff.column("n")[0].as_py() == 0


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
                    rows[name], n_rows = _run(eng, query, name, designs[name])
                    cpu[name].append(_cpu() - t)
                    print(f"  round {r + 1}  {name:36s} CPU {cpu[name][-1]:6.2f} s  {n_rows:,} rows", flush=True)
            a, b = (statistics.median(cpu[k]) for k in designs)
            same = _same(eng, query, earlier, rows)
            print(f"  median CPU: {earlier} {a:.2f} s, {query} (shipped) {b:.2f} s ({b / a:.2f}x); "
                  f"rows: {'same' if same else 'DIFFERENT'}", flush=True)


if __name__ == "__main__":
    main()
