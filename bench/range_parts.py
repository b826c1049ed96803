"""Where do the exec graph's range step and bucket step (paradise.events.partitions) spend their CPU,
part by part, on a real trace, at the partition sizes the embedded engine picks for a memory budget?
Each case runs in a fresh process, in the DuckDB engine's own connection as `analyze --memory-limit`
builds it: the parts of range step I (the DuckDB queries events_exec_rows / events_exec_sends into
Arrow, rangerows' numpy, buckets_of, the string columns' dictionary codes, the bucket files of execs
and sends), then, over a partition directory holding every range's files (written by this script
the first time, all range steps timed together), the parts of bucket step B (the reads of its files,
bucketjoin.join, bucket_edges' SQL over the deliveries, the edges and graph writes). The bucket
step's input files are kept, so that a case can be run again. It prints each part's user and system
CPU seconds and the per-row cost; system CPU is mostly first touches of fresh memory (page faults).

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/range_parts.py \\
         TRACE:MEMORY:RANGES:BUCKETS:DIR [...]   (e.g. /tmp/s11/scale/charm-1e08:2GiB:3,4:3,4:/tmp/rp)
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile

import numpy as np


def _cpu() -> tuple[float, float, int]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, r.ru_minflt


class Parts:
    """User and system CPU seconds of each named part, in the order marked."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, int]] = []
        self.last = _cpu()

    def mark(self, name: str) -> None:
        now = _cpu()
        self.rows.append((name, now[0] - self.last[0], now[1] - self.last[1], now[2] - self.last[2]))
        self.last = now

    def show(self, per: int, unit: str) -> None:
        total = ("step", *(sum(r[i] for r in self.rows) for i in (1, 2, 3)))
        for name, u, s, faults in self.rows + [total]:
            print(f"  {name:14s} user {u:6.2f} s  sys {s:6.2f} s  page faults {faults:9,d}   per {unit} "
                  f"{1e6 * (u + s) / max(per, 1):.3f} us (user {1e6 * u / max(per, 1):.3f})", flush=True)


def _size(root: str) -> float:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs) / 2**20


def one_case(trace_dir: str, memory: str, ks: list[int], bs: list[int], root: str) -> None:
    """The parts of range steps `ks` and bucket steps `bs`, printed, one after another in one process
    (the first of each kind pays for the process's first touches of memory, the next show what a step
    costs among others); the range files of every range under root."""
    import pyarrow.parquet as pq

    from paradise.engines.duckdb_engine import DuckDBEngine
    from paradise.events import bucketjoin, execgraph, partitions, rangerows
    from paradise.format.arrays import one_array, to_numpy
    from paradise.memory import parse_size
    from paradise.store import open_trace

    eng = DuckDBEngine(open_trace(trace_dir), memory_limit=parse_size(memory))
    pes = execgraph._pe_table(eng)
    pe_execs = list(zip(pes.column("pe").to_pylist(), pes.column("execs").to_pylist()))
    chunk, buckets = partitions.sizes(sum(n for _, n in pe_execs), eng.step_memory())
    ranges = execgraph.pe_ranges(pe_execs, chunk)
    run_t0 = int(np.min(pes.column("pe_t0").to_numpy())) if len(pes) else 0
    con = eng._con()
    print(f"{os.path.basename(trace_dir)} under {memory}: {len(ranges)} ranges, {buckets} buckets; "
          f"load {os.getloadavg()[0]:.1f}", flush=True)

    for k in ks:
        lo, hi = ranges[k]
        scratch = tempfile.mkdtemp(prefix="range-parts-", dir=os.path.dirname(os.path.abspath(root)))
        p = Parts()
        if hasattr(rangerows, "range_rows"):
            t = rangerows.range_rows(con, "events_exec_rows", lo, hi)
            p.mark("exec SQL")
            execs, unended = rangerows.numbered(t, pes)
            p.mark("exec numpy")
            s = rangerows.range_rows(con, "events_exec_sends", lo, hi)
            p.mark("send SQL")
            sends = rangerows.with_senders(s, execs)
            p.mark("send numpy")
        else:  # a tree before the queries and the numpy were split (main before run 29)
            t = s = None
            execs, unended = rangerows.exec_rows(con, lo, hi, pes)
            p.mark("exec rows")
            sends = rangerows.send_rows(con, lo, hi, execs)
            p.mark("send rows")
        ids = to_numpy(one_array(execs.column("id")), np.int64)
        bx = rangerows.buckets_of(execs.column("msg"), ids, buckets)
        b_s = rangerows.buckets_of(sends.column("msg"), None, buckets)
        p.mark("buckets_of")
        if hasattr(partitions, "coded"):
            execs, sends = partitions.coded(execs), partitions.coded(sends)
            p.mark("coded")
        partitions.write_buckets(scratch, partitions.EXECS, k, execs, bx, buckets)
        p.mark("write execs")
        partitions.write_buckets(scratch, partitions.SENDS, k, sends, b_s, buckets)
        p.mark("write sends")
        print(f" range {k} (PEs {lo}..{hi}): {len(execs):,} execs, {len(sends):,} sends; files {_size(scratch):.0f} MiB")
        p.show(len(execs) + len(sends), "row")
        shutil.rmtree(scratch)
        del t, s, execs, sends, unended

    if not os.path.exists(partitions.pes_file(root)):
        os.makedirs(root, exist_ok=True)
        pq.write_table(pes, partitions.pes_file(root))
        before = _cpu()
        for i, (lo, hi) in enumerate(ranges):
            partitions.range_step(con, root, i, lo, hi, buckets)
        after = _cpu()
        print(f" all {len(ranges)} range steps into {root}: user {after[0] - before[0]:.2f} s, "
              f"sys {after[1] - before[1]:.2f} s, page faults {after[2] - before[2]:,d}; files {_size(root):.0f} MiB",
              flush=True)
    for b in bs:
        p = Parts()
        files_x, files_s = partitions.bucket_files(root, partitions.EXECS, b), partitions.bucket_files(root, partitions.SENDS, b)
        x = partitions._read(files_x)
        p.mark("read execs")
        s = partitions._read(files_s)
        p.mark("read sends")
        graph, deliveries = bucketjoin.join(x, s, run_t0)
        p.mark("join")
        edges = partitions.bucket_edges(con, deliveries)
        p.mark("bucket_edges")
        out = tempfile.mkdtemp(prefix="bucket-parts-", dir=os.path.dirname(os.path.abspath(root)))
        pq.write_table(edges, os.path.join(out, "e.parquet"), **partitions.file_options(edges.schema))
        p.mark("write edges")
        pq.write_table(graph, os.path.join(out, "g.parquet"), **partitions.file_options(graph.schema))
        p.mark("write graph")
        print(f" bucket {b}: {len(x):,} execs, {len(s):,} sends in {len(files_x) - 1} + {len(files_s) - 1} files; "
              f"graph file {_size(out):.0f} MiB")
        p.show(len(x) + len(s), "row")
        print(f" peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
        shutil.rmtree(out)
    eng.close()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        trace_dir, memory, k, b, root = sys.argv[2].split(":", 4)
        one_case(trace_dir, memory, [int(v) for v in k.split(",")], [int(v) for v in b.split(",")], root)
        return
    for case in sys.argv[1:]:  # each case in its own process: no allocator state carried over
        subprocess.run([sys.executable, __file__, "--one", case], check=True)


if __name__ == "__main__":
    main()
