"""Where does one exec-graph range step (paradise.events.partitions.range_step) spend its CPU, and
how does that grow with the range's size and the bucket count? Each case runs the step's parts on
one range of a synth trace in a fresh process, as a Dask task runs them (DuckDB on one thread under
the task's memory share): the range's exec rows (events_exec_rows + rangerows.exec_rows), its send
rows (rangerows.send_rows), the buckets of both (rangerows.buckets_of) and the bucket files
(partitions.write_buckets); it prints each part's user and system CPU seconds per exec of the range.
A trace of fewer PEs stands for a larger trace of 64 PEs: what a range step sees is its PEs' rows.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/range_parts.py
     TRACE:PES_PER_RANGE:BUCKETS:MEMORY [...]   (e.g. /tmp/t/charm-1e08:2:25:1GiB)
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def _cpu() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def one_case(trace_dir: str, pes_in_range: int, buckets: int, memory: str) -> None:
    """The parts of the step over PEs 0..pes_in_range-1, printed."""
    from paradise.engines.duckdb_engine import DuckDBEngine, connect, events_view_sql
    from paradise.events import execgraph, partitions, rangerows
    from paradise.format.arrays import one_array, to_numpy
    from paradise.store import open_trace

    trace = open_trace(trace_dir)
    with DuckDBEngine(trace) as eng:
        pes = execgraph._pe_table(eng)
    lo, hi = 0, pes_in_range - 1
    con = connect()
    con.execute("SET threads = 1")
    con.execute(f"SET memory_limit = '{memory}'")
    con.execute(events_view_sql(execgraph._range_files(trace, lo, hi), trace.corrections))
    root = tempfile.mkdtemp(prefix="range-parts-")
    parts, last = [], _cpu()

    def mark(name: str) -> None:
        nonlocal last
        now = _cpu()
        parts.append((name, now[0] - last[0], now[1] - last[1]))
        last = now

    execs, unended = rangerows.exec_rows(con, lo, hi, pes)
    mark("exec_rows")
    sends = rangerows.send_rows(con, lo, hi, execs)
    mark("send_rows")
    ids = to_numpy(one_array(execs.column("id")), np.int64)
    bx = rangerows.buckets_of(execs.column("msg"), ids, buckets)
    bs = rangerows.buckets_of(sends.column("msg"), None, buckets)
    mark("buckets_of")
    partitions.write_buckets(root, partitions.EXECS, 0, execs, bx, buckets)
    mark("write execs")
    partitions.write_buckets(root, partitions.SENDS, 0, sends, bs, buckets)
    mark("write sends")
    files = sum(len(fs) for _, _, fs in os.walk(root))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)
    shutil.rmtree(root)
    n = len(execs)
    usr, sys_ = sum(p[1] for p in parts), sum(p[2] for p in parts)
    print(f"{os.path.basename(trace_dir)}: {pes_in_range} PE(s) per range, {buckets} buckets, DuckDB {memory}: "
          f"{n:,} execs, {len(sends):,} sends; {files} files, {size / 2**20:.0f} MiB; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB; load {os.getloadavg()[0]:.1f}")
    for name, u, s in parts:
        print(f"  {name:12s} user {u:6.2f} s  sys {s:6.2f} s   per exec {1e6 * (u + s) / n:.3f} us")
    print(f"  {'step':12s} user {usr:6.2f} s  sys {sys_:6.2f} s   per exec {1e6 * (usr + sys_) / n:.3f} us", flush=True)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        trace_dir, pes, buckets, memory = sys.argv[2].rsplit(":", 3)
        one_case(trace_dir, int(pes), int(buckets), memory)
        return
    for case in sys.argv[1:]:  # each case in its own process: no allocator state carried over
        subprocess.run([sys.executable, __file__, "--one", case], check=True)


if __name__ == "__main__":
    main()
