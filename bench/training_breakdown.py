"""training_breakdown (paradise/sql/) against its islands form (bench/sql/training_breakdown_islands.sql),
side by side in one engine over one trace: CPU seconds of each (the process's, every thread), alternating,
after training_rows is kept (the engine's table of the training rows, built before either runs); the
rows of both must be the same.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/training_breakdown.py TRACE [--rounds 3]
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

ISLANDS = (ROOT / "bench" / "sql" / "training_breakdown_islands.sql").read_text()


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace", type=Path)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    designs = {"islands": ISLANDS, "sweep (shipped)": load_sql("training_breakdown")}
    with DuckDBEngine(open_trace(args.trace)) as eng:
        n = eng.sql("SELECT count(*) AS n FROM training_rows").column("n")[0].as_py()
        print(f"{args.trace}: {n:,} training rows; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}", flush=True)
        cpu: dict[str, list[float]] = {k: [] for k in designs}
        rows: dict[str, list] = {}
        for r in range(args.rounds):
            for name in (list(designs) if r % 2 == 0 else list(reversed(designs))):
                t = _cpu()
                rows[name] = eng.sql(designs[name]).to_pylist()
                cpu[name].append(_cpu() - t)
                print(f"  round {r + 1}  {name:16s} CPU {cpu[name][-1]:6.2f} s  {len(rows[name]):,} rows", flush=True)
    a, b = (statistics.median(cpu[k]) for k in designs)
    same = rows["islands"] == rows["sweep (shipped)"]
    print(f"median CPU: islands {a:.2f} s, sweep {b:.2f} s ({b / a:.2f}x); rows: {'same' if same else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
