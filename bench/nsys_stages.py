"""Where an Nsight Systems import spends its CPU: exclusive CPU and wall time per stage of one
`import_trace` call, in this process, by wrapping the importer's functions (no profiler overhead
per Python call, unlike cProfile).

Stages: start-up (the interpreter and the importer's imports, measured from the process's start),
the survey (sqlite3 queries before the rows), the SQL read (the ADBC driver's record batches), the
read's checks, each table's transform into paradise rows, the string-table lookups, the merge into
time order (its loop and the interleave of each output slice), the Parquet write. Stages nest
(a transform pulls its batches from the read): each is charged only its own time. The importer
imported is the first `paradise` on sys.path, so `PYTHONPATH=<snapshot>` profiles another tree.

Run: nice .venv/bin/python bench/nsys_stages.py EXPORT.sqlite
"""

from __future__ import annotations

import argparse
import collections
import functools
import os
import sys
import tempfile
import time

STARTED = (time.process_time(), time.perf_counter())

import pyarrow.parquet as pq  # noqa: E402

import paradise.format.order as order  # noqa: E402
import paradise.importers.nsys as nsys  # noqa: E402
import paradise.importers.nsys_sqlite as sqlite  # noqa: E402
import paradise.importers.nsys_tables as tables  # noqa: E402

START_UP = (time.process_time() - STARTED[0], time.perf_counter() - STARTED[1])
_spent: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
_stack: list[list] = []


def _enter(name: str) -> None:
    now = (time.process_time(), time.perf_counter())
    if _stack:
        top = _stack[-1]
        _spent[top[0]][0] += now[0] - top[1]
        _spent[top[0]][1] += now[1] - top[2]
    _stack.append([name, *now])


def _leave() -> None:
    now = (time.process_time(), time.perf_counter())
    top = _stack.pop()
    _spent[top[0]][0] += now[0] - top[1]
    _spent[top[0]][1] += now[1] - top[2]
    if _stack:
        _stack[-1][1:] = now


def _call(owner: object, attr: str, stage: str) -> None:
    fn = getattr(owner, attr)

    @functools.wraps(fn)
    def timed(*a, **k):
        _enter(stage)
        try:
            return fn(*a, **k)
        finally:
            _leave()

    setattr(owner, attr, timed)


def _generator(owner: object, attr: str, stage: str) -> None:
    fn = getattr(owner, attr)

    @functools.wraps(fn)
    def timed(*a, **k):
        _enter(stage)
        try:
            it = iter(fn(*a, **k))
        finally:
            _leave()
        while True:
            _enter(stage)
            try:
                item = next(it)
            except StopIteration:
                _leave()
                return
            except BaseException:
                _leave()
                raise
            _leave()
            yield item

    setattr(owner, attr, timed)


def _instrument() -> None:
    _call(nsys, "_survey", "survey (sqlite3 queries)")
    _generator(sqlite.Export, "_stream", "SQL read (ADBC record batches)")
    _generator(sqlite.Export, "_batches", "read checks, NULL -> -1")
    for name, fn in list(vars(tables).items()):
        if name.endswith("_rows") and callable(fn):
            _generator(tables, name, f"transform {name}")
    tables.DEVICE_READERS = tuple((t, getattr(tables, f.__name__)) for t, f in tables.DEVICE_READERS)
    _call(tables, "collect_steps", "steps")
    _call(tables, "collect_launch_steps", "steps")
    _call(tables.Context, "names", "names (StringIds)")
    _generator(order, "merge_time_ordered", "merge (loop)")
    _call(order, "_interleave", "merge (interleave of a slice)")
    nsys.merge_time_ordered = order.merge_time_ordered
    _call(nsys, "_full", "write (format columns)")
    _call(pq.ParquetWriter, "write_table", "write (ParquetWriter)")
    _call(pq.ParquetWriter, "close", "write (ParquetWriter)")
    _call(pq.ParquetWriter, "__init__", "write (ParquetWriter)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("export")
    a = ap.parse_args()
    _instrument()
    out = os.path.join(tempfile.mkdtemp(prefix="paradise-stages-"), "out.parquet")
    _enter("other")
    nsys.import_trace(a.export, out, force=True)
    _leave()
    total = (time.process_time() - STARTED[0], time.perf_counter() - STARTED[1])
    os.remove(out)
    print(f"{'stage':<36} {'CPU s':>6} {'wall s':>6}")
    print(f"{'start-up (python, imports)':<36} {START_UP[0]:>6.3f} {START_UP[1]:>6.3f}")
    for stage, (cpu, wall) in sorted(_spent.items(), key=lambda kv: -kv[1][0]):
        print(f"{stage:<36} {cpu:>6.3f} {wall:>6.3f}")
    print(f"{'total':<36} {total[0]:>6.3f} {total[1]:>6.3f}")
    print(f"paradise from {os.path.dirname(nsys.__file__)}; load average {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
