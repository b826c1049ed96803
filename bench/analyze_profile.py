"""Where does a full `paradise analyze` spend its CPU? One in-process run, analyses one at a time,
with the process's CPU seconds (every DuckDB thread included) charged to what ran: each analysis,
each shared result, each engine query by its SQL file, each exec-graph step; printed as a table of
self time (a stage's own CPU, its inner stages' taken out), most first.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/analyze_profile.py TRACE
     [--memory-limit 2GiB] [--only overview]
`--only overview` profiles the first report (`analyze --only overview`): the stages before the
analyses (open_trace: footers and metadata; the engine) are charged too.
The run is sequential (no prefetch, one analysis at a time, the exec graph's steps one after another
whatever the budget) so that the charges do not overlap;
its total is therefore more than a concurrent run's wall time, and about its CPU time.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradise.analyses import ANALYSES  # noqa: E402

STACK: list[list[Any]] = []  # [label, start cpu, cpu of inner stages]
SELF: dict[str, float] = defaultdict(float)
CALLS: dict[str, int] = defaultdict(int)


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def charged(label: str, fn: Callable[[], Any]) -> Any:
    """fn(), its CPU charged to `label` less what inner stages charged."""
    STACK.append([label, cpu(), 0.0])
    try:
        return fn()
    finally:
        name, start, inner = STACK.pop()
        total = cpu() - start
        SELF[name] += total - inner
        CALLS[name] += 1
        if STACK:
            STACK[-1][2] += total


def sql_name(text: str) -> str:
    """The SQL file a statement came from (its first comment line), else its first words."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[3:].split(":")[0] if first.startswith("-- ") else " ".join(first.split()[:4])[:40]


def patch() -> None:
    from paradise.analyses import runner, session
    from paradise.engines import duckdb_engine
    from paradise.events import partitions

    runner.concurrent = lambda s: False  # one analysis at a time, no prefetch
    eng = duckdb_engine.DuckDBEngine
    sql, materialize, run_steps, batches = eng.sql, eng.materialize, eng.run_steps, eng.batches
    eng.sql = lambda self, text, **p: charged("query " + sql_name(text), lambda: sql(self, text, **p))
    eng.materialize = lambda self, table, name, **p: charged("table " + name,
                                                             lambda: materialize(self, table, name, **p))
    eng.run_steps = lambda self, fn, items, files=None, step_bytes=None: charged(
        "run_steps", lambda: run_steps(self, fn, items, files))  # one step at a time: charges do not overlap

    def streamed(self: Any, name: str, **p: Any) -> Iterator[Any]:
        reader = batches(self, name, **p)
        it = iter(reader)
        while True:
            b = charged("stream " + name, lambda: next(it, None))
            if b is None:
                return
            yield b
    eng.batches = streamed
    make = session.Session._make
    session.Session._make = lambda self, key, fut: charged("shared " + key, lambda: make(self, key, fut))
    for name in ANALYSES:
        mod = importlib.import_module(f"paradise.analyses.{name}")
        mod.analyze = wrapped("analysis " + name, mod.analyze)
    for step in ("range_step", "bucket_step", "native_graph"):
        setattr(partitions, step, wrapped("step " + step, getattr(partitions, step)))


def wrapped(label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    return lambda *a, **k: charged(label, lambda: fn(*a, **k))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--memory-limit", default=None)
    ap.add_argument("--only", default=None, help="comma-separated analyses, as analyze --only")
    args = ap.parse_args()
    patch()
    import paradise.run as run
    import paradise.store as store
    from paradise.memory import parse_size

    store.open_trace = wrapped("open_trace", store.open_trace)  # open_run imports it when called
    run.make_engine = wrapped("make_engine", run.make_engine)
    names = tuple(args.only.split(",")) if args.only else ANALYSES
    limit = parse_size(args.memory_limit) if args.memory_limit else None
    wall, c0 = time.perf_counter(), cpu()
    with run.open_run(args.trace, memory_limit=limit) as session:
        results, errors = charged("analyze (own)", lambda: run.analyze_run(session, names=names))
    total, wall = cpu() - c0, time.perf_counter() - wall
    print(f"{args.trace}: {total:.1f} CPU s, {wall:.1f} s wall, load {os.getloadavg()[0]:.1f}; "
          f"{len(results)} analyses, errors: {errors or 'none'}")
    print(f"  {'stage':58s} {'calls':>5s} {'CPU s':>7s} {'share':>6s}")
    for label, s in sorted(SELF.items(), key=lambda kv: -kv[1]):
        if s >= 0.05 * total / 100:
            print(f"  {label:58s} {CALLS[label]:5d} {s:7.2f} {100 * s / total:5.1f}%")


if __name__ == "__main__":
    main()
