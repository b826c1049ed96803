"""Does the first report (`analyze --only overview`) get cheaper from one read of the trace instead of two?

The first report needs overview_pe (a DuckDB hash aggregate over one scan) and each PE's busy time
(paradise.engines.busy: a numpy sweep over the running and idle rows in the format's row order, a
second scan streamed to Arrow). This runs, on one trace, in one process, side by side and twice
each, the shipped design and the one-read designs that could replace it, and checks that each
gives the same overview_pe rows and busy totals:
  * two reads:     engine.query("overview_pe") and busy._swept(engine, "intervals") (shipped),
  * duckdb tee:    one DuckDB stream of every column overview_pe reads; each batch is swept in numpy
                   and handed to a second DuckDB connection that runs overview_pe's SQL over the stream,
  * pyarrow tee:   the same, the files read by pyarrow (dictionary columns kept as dictionaries),
  * windows:       one DuckDB query, overview_pe's aggregate plus the sweep as streaming windows
                   (running maximum end per PE as HUGEINT pe << 64 | end, and lag), no Python pass.
CPU seconds are the process's (getrusage, every thread); wall beside them.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/first_report_reads.py TRACE_DIR
(a trace without clock corrections or pieces, e.g. `paradise synth --kind torch --events 1e7`).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paradise.engines import busy, load_sql  # noqa: E402
from paradise.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from paradise.store import open_trace  # noqa: E402

COLUMNS = ["kind", "pe", "t0", "t1", "active", "name", "coll", "cat", "peer_pe", "bytes"]
"""Every column overview_pe and the sweep read."""
RUNNING = ("exec", "piece", "phase")
"""Kinds of the running intervals (events_running.sql; `idle` rows are the other intervals)."""
Totals = dict[int, list[int]]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def sweep_batch(sweep: busy._Sweep, b: pa.RecordBatch) -> None:
    """The interval rows of a batch of events (kind as strings or a dictionary) into the sweep."""
    kind = b.column(0)
    if isinstance(kind.type, pa.DictionaryType):
        words = kind.dictionary.to_pylist()
        codes = busy._values(kind.indices)
    else:
        enc = kind.dictionary_encode()
        words, codes = enc.dictionary.to_pylist(), busy._values(enc.indices)
    flag = np.array([1 if w in RUNNING else 0 if w == "idle" else -1 for w in words], np.int8)[codes]
    t1 = b.column(3)
    keep = (flag >= 0) & busy.validity(t1)
    sweep.batch(busy._values(b.column(1))[keep], busy._values(b.column(2))[keep], busy._values(t1)[keep],
                flag[keep] == 1)


def aggregate_stream(batches: Iterator[pa.RecordBatch], schema: pa.Schema, sweep: busy._Sweep) -> pa.Table:
    """overview_pe's SQL over the batches in a second DuckDB connection, each batch swept on its way."""
    def tee() -> Iterator[pa.RecordBatch]:
        for b in batches:
            sweep_batch(sweep, b)
            yield b

    con = duckdb.connect()
    try:
        con.register("events", pa.RecordBatchReader.from_batches(schema, tee()))
        return con.sql(load_sql("overview_pe")).to_arrow_table()
    finally:
        con.close()


def two_reads(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    return eng.query("overview_pe"), busy._swept(eng, "intervals")


def duckdb_tee(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    sweep = busy._Sweep()
    reader = eng.con.cursor().sql(f"SELECT {', '.join(COLUMNS)} FROM events").to_arrow_reader(batch_size=1 << 20)
    return aggregate_stream(iter(reader), reader.schema, sweep), sweep.totals


def pyarrow_tee(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    sweep = busy._Sweep()
    schema = pq.ParquetFile(files[0]).schema_arrow
    schema = pa.schema([schema.field(c) for c in COLUMNS])

    def batches() -> Iterator[pa.RecordBatch]:
        for f in files:
            pf = pq.ParquetFile(f)
            for i in range(pf.num_row_groups):
                yield from pf.read_row_group(i, columns=COLUMNS, use_threads=False).to_batches()

    return aggregate_stream(batches(), schema, sweep), sweep.totals


def _running_max(expr: str) -> str:
    return f"max({expr}) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"


def windows(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    pack = "pe::HUGEINT * 18446744073709551616::HUGEINT + ({t}::HUGEINT + 9223372036854775808::HUGEINT)"
    unpack = ("CASE WHEN ({c} >> 64)::INTEGER = pe THEN (({c} & 18446744073709551615::HUGEINT)"
              " - 9223372036854775808::HUGEINT)::BIGINT END")
    iv = "CASE WHEN kind IN ('exec', 'piece', 'phase', 'idle') AND t1 IS NOT NULL THEN kind <> 'idle' END"
    part = "greatest(0, t1 - greatest(t0, coalesce({p}, t0)))"
    body = load_sql("overview_pe").split("SELECT", 1)[1].split("FROM events")[0]
    text = f"""
    WITH r AS (SELECT *, {iv} AS iv FROM events),
    m AS (SELECT *, {_running_max(f"CASE WHEN iv IS NOT NULL THEN {pack.format(t='t1')} END")} AS m_any,
                    {_running_max(f"CASE WHEN iv THEN {pack.format(t='t1')} END")} AS m_busy FROM r),
    l AS (SELECT *, lag(m_any) OVER () AS p_any, lag(m_busy) OVER () AS p_busy FROM m),
    c AS (SELECT *, CASE WHEN iv IS NOT NULL THEN {part.format(p=unpack.format(c='p_any'))} END AS cover_add,
                    CASE WHEN iv THEN {part.format(p=unpack.format(c='p_busy'))} END AS busy_add FROM l)
    SELECT {body}, sum(busy_add)::BIGINT AS busy_ns, sum(cover_add)::BIGINT AS covered_ns,
           count(*) FILTER (WHERE iv) AS busy_rows, count(*) FILTER (WHERE NOT iv) AS idle_rows
    FROM c GROUP BY ALL ORDER BY ALL NULLS FIRST"""
    t = eng.con.cursor().sql(text).to_arrow_table()
    per_pe = duckdb.sql("SELECT pe, sum(busy_ns), sum(covered_ns), sum(busy_rows), sum(idle_rows) FROM t "
                        "WHERE pe IS NOT NULL GROUP BY pe").fetchall()
    totals = {int(p): [int(b), int(c), int(nb), int(ni)] for p, b, c, nb, ni in per_pe if nb or ni}
    return t.drop_columns(["busy_ns", "covered_ns", "busy_rows", "idle_rows"]), totals


DESIGNS: dict[str, Callable[[DuckDBEngine, list[str]], tuple[pa.Table, Totals]]] = {
    "two reads (shipped)": two_reads, "duckdb tee": duckdb_tee, "pyarrow tee": pyarrow_tee, "windows": windows,
}


def same_groups(a: pa.Table, b: pa.Table) -> bool:
    """The same rows, whatever their order and integer widths."""
    con = duckdb.connect()
    con.register("a", a)
    con.register("b", b.cast(a.schema))
    diff = con.sql("SELECT count(*) FROM ((FROM a EXCEPT ALL FROM b) UNION ALL (FROM b EXCEPT ALL FROM a))").fetchall()
    return a.num_rows == b.num_rows and diff[0][0] == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    trace = open_trace(args.trace)
    if trace.corrections or trace.may_hold_pieces:
        raise SystemExit(f"{args.trace}: needs a trace without clock corrections or pieces (the tees read raw rows)")
    files = [str(f) for f in trace.files]
    print(f"{args.trace}: {trace.num_rows:,} rows, {len(files)} files; duckdb {duckdb.__version__}, "
          f"pyarrow {pa.__version__}, numpy {np.__version__}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    ref: tuple[pa.Table, Totals] | None = None
    for rnd in range(args.rounds):
        for label, fn in DESIGNS.items():
            with DuckDBEngine(trace) as eng:
                c, w = cpu(), time.perf_counter()
                groups, totals = fn(eng, files)
                cs, ws = cpu() - c, time.perf_counter() - w
            if ref is None:
                ref = (groups, totals)
            same = "same" if same_groups(ref[0], groups) and ref[1] == totals else "DIFFERENT"
            print(f"  round {rnd + 1}  {label:20s} CPU {cs:6.2f} s  wall {ws:6.2f} s  overview_pe and busy: {same}",
                  flush=True)
    print(f"load at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
