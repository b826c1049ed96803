"""The exec graph's partitions: range steps over PEs, then bucket steps over `msg` hashes, each a
function of (a DuckDB connection over the trace's rows, a range or a bucket, the partition
directory) that writes Parquet files there. The embedded engine runs them one after another in
its own connection; Dask runs them as tasks on its workers (paradise.engines.dask_engine).

An engine that runs the steps in its own process may keep partitions as Arrow tables in its memory
instead of these files, within what the budget leaves over (paradise.events.keptparts): a range's
rows by bucket, and a bucket's graph rows.

Layout of the partition directory (on a path every worker sees):
  pes.parquet                     each PE's exec count, first id and first start (the client's)
  execs/bucket=B/rI_0.parquet     the execs of range I whose message hashes to bucket B
  sends/bucket=B/rI_0.parquet     the send rows of range I whose message hashes to bucket B
  execs.parquet, sends.parquet    no rows: the schema of both, for a bucket without files
  graph/bB.parquet                bucket B of the exec graph (paradise.events.bucketjoin)
  edges/bB.parquet                bucket B's message edges (communication_edges)
A bucket step removes its input files once its graph file is written, so the directory holds about
one copy of the graph at any time.
"""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paradise.engines import load_sql
from paradise.errors import disk_full
from paradise.events import bucketjoin, rangerows
from paradise.events.keptparts import KeptParts
from paradise.format.arrays import from_numpy, one_array, to_numpy

RANGE_EXEC_BYTES = 512
"""Memory a range step needs per exec of its range (its rows and sends as Arrow, numpy's columns and
the engine's copy as it writes them): with 1 GiB, ranges of about 2*10^6 execs."""
BUCKET_EXEC_BYTES = 512
"""Memory a bucket step needs per exec of its bucket (its execs and sends as Arrow, the numpy join's
arrays, the graph's new columns and the deliveries)."""
WRITE_CHUNK_ROWS = 1 << 20
"""Rows a range step puts in bucket order at a time (write_buckets): a chunk's copy (8 MiB per
integer column) stays small enough for the allocator to reuse, whatever the range's size."""
EXECS, SENDS, GRAPH, EDGES = "execs", "sends", "graph", "edges"
PARQUET = "FORMAT parquet, PARQUET_VERSION V2, COMPRESSION zstd, COMPRESSION_LEVEL 1"
"""How DuckDB writes partition files (the object steps' buckets): Parquet 2's encodings (delta, byte
stream split), then zstd at its fastest level, which cuts a bucket file to about a quarter for about
the same CPU to write and read as no compression, so that the spill directory stays within twice
the trace."""


RANGE_MAX_EXECS = 2_000_000
"""The most execs in one range step, whatever the budget: a step costs more per row the larger its
partition (cache misses, the allocator, DuckDB spilling its copy). 10^8 rows (5*10^7 execs) at the
default budget: 211 CPU s in ranges and buckets of 2*10^6 execs, 254-260 s at 10^6 or 4*10^6 and
292 s at 10^7 (docs/benchmarks.md, runs 27-28)."""
BUCKET_MAX_EXECS = 2_000_000
"""The most execs in one bucket step, whatever the budget (as RANGE_MAX_EXECS)."""
NATIVE_MAX_EXECS = BUCKET_MAX_EXECS
"""Up to this many execs (and a budget that holds them) the graph is one bucket kept in the embedded
engine's tables (execgraph.materialize `native`); above, capped buckets through files. At 5*10^6
execs three file buckets took 17.9-18.5 CPU s and 1.3 GiB against one native bucket's 19.7-21.2 s and 4.2 GiB; at
2*10^6 and 5*10^5 execs the two were within noise (docs/benchmarks.md, run 28)."""


SHARED_MIN_EXECS = 1_000_000
"""The smallest partition the embedded engine makes to run several steps at once (partition_memory). 10^8
rows (5*10^7 execs) under --memory-limit 2GiB on 2 CPUs, steps of 10^6 execs two at a time against one
of 2*10^6 at a time: 109-121 s wall against 137-148 s, for 193-210 CPU s against 174-186 s and a lower
peak (docs/benchmarks.md, "Steps side by side under a small budget")."""


def partition_memory(step_memory: int, threads: int) -> int:
    """Bytes one partition is sized for when the engine's `threads` may run steps side by side: the step
    memory shared by as many steps as there are threads, but no partition below SHARED_MIN_EXECS execs
    (fewer steps side by side then). A large budget keeps partitions at the caps (sizes) either way."""
    side_by_side = max(1, min(int(threads), int(step_memory) // (SHARED_MIN_EXECS * RANGE_EXEC_BYTES)))
    return int(step_memory) // side_by_side


def sizes(execs: int, step_memory: int, capped: bool = True) -> tuple[int, int]:
    """(execs per range, bucket count) for a graph of `execs` executions when one step may use
    `step_memory` bytes: a small budget gives many small partitions, a large one partitions of at most
    RANGE_MAX_EXECS / BUCKET_MAX_EXECS execs (one bucket up to NATIVE_MAX_EXECS). Without `capped`,
    partitions as large as the budget allows (the Dask engine's sizing)."""
    memory = max(int(step_memory), 1)
    chunk = max(1, memory // RANGE_EXEC_BYTES)
    buckets = max(1, math.ceil(execs * BUCKET_EXEC_BYTES / memory))
    if capped:
        chunk = min(chunk, RANGE_MAX_EXECS)
        if buckets > 1 or execs > NATIVE_MAX_EXECS:
            buckets = max(buckets, math.ceil(execs / BUCKET_MAX_EXECS))
    return chunk, buckets


def _quoted(path: str) -> str:
    return "'" + path.replace("'", "''") + "'"


def _files(paths: list[str]) -> str:
    return "[" + ", ".join(_quoted(p) for p in paths) + "]"


def quoted(path: str) -> str:
    """`path` as an SQL string literal."""
    return _quoted(path)


def copy_by_bucket(con: Any, rows: str, root: str, part: str, prefix: str, schema_file: bool,
                   params: dict[str, Any] | None = None) -> None:
    """Writes query `rows` (which has a `bucket` column; `params` bound) as
    root/part/bucket=B/{prefix}_N.parquet; with `schema_file`, also root/part.parquet: no rows, the
    schema without `bucket`, which stands for a bucket that got no file."""
    con.execute(f"COPY ({rows}) TO {_quoted(os.path.join(root, part))} ({PARQUET}, PARTITION_BY (bucket), "
                f"FILENAME_PATTERN '{prefix}_{{i}}', OVERWRITE_OR_IGNORE)", params)
    if schema_file:
        con.execute(f"COPY (SELECT * EXCLUDE (bucket) FROM ({rows}) LIMIT 0) TO "
                    f"{_quoted(os.path.join(root, part + '.parquet'))} ({PARQUET})", params)


def split_files(engine: Any, step: Any, row_bytes: int, prefix: str) -> tuple[str, int]:
    """Runs split `step` once per group of the engine's files into a new partition directory, with
    a bucket count sized from the trace's rows (`row_bytes` each) and the engine's step memory, at
    least one per group so that every worker gets a share; returns (the directory, the buckets)."""
    groups = getattr(engine, "groups", None) or [[str(f) for f in engine.trace.files]]
    rows = int(getattr(engine.trace, "num_rows", 0) or 0)
    buckets = max(len(groups), math.ceil(rows * row_bytes / max(engine.step_memory(), 1)))
    root = engine.scratch_dir(prefix)
    engine.run_steps(step, [{"root": root, "i": i, "buckets": buckets} for i in range(len(groups))], files=groups)
    return root, buckets


@contextmanager
def scratch_writes(engine: Any) -> Iterator[None]:
    """Partition files written meanwhile: a full or refused spill disk becomes the engine's one-line
    error (scratch_unwritable) instead of an OSError."""
    try:
        yield
    except OSError as exc:
        if hasattr(engine, "scratch_unwritable") and disk_full(exc):
            raise engine.scratch_unwritable(exc) from None
        raise


def write_whole(path: str, rows: pa.Table) -> None:
    """`rows` as the partition file `path`, written whole, then renamed (a reader never sees half)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(rows, path + ".tmp", **file_options(rows.schema))
    os.replace(path + ".tmp", path)


def pes_file(root: str) -> str:
    return os.path.join(root, "pes.parquet")


def range_step(con: Any, root: str, i: int, lo: int, hi: int, buckets: int, native: bool = False,
               pes: Any = None, kept: KeptParts | None = None) -> None:
    """Range step I: numbers the execs of PEs lo..hi and finds each of their send rows' sending exec
    (paradise.events.rangerows, over the files' row order) and writes both, by bucket, under `root`,
    or keeps them in `kept` when its allowance holds the range; `native` (one bucket in the embedded
    engine's memory): appends them to its tables NATIVE instead. `pes` (each PE's first id, Arrow) is
    read from pes.parquet when not given in-process."""
    pes = pes if pes is not None else pq.read_table(pes_file(root))
    execs, unended = rangerows.exec_rows(con, lo, hi, pes)
    sends = rangerows.send_rows(con, lo, hi, execs)
    if len(unended):
        execs = pa.concat_tables([execs, unended])
    if native:
        for table, rows in zip(NATIVE, (execs, sends)):
            con.register("range_rows", rows)
            try:
                con.execute((f"INSERT INTO {table} " if i else f"CREATE OR REPLACE TABLE {table} AS ")
                            + "SELECT * FROM range_rows")
            finally:
                con.unregister("range_rows")
        return
    ids = to_numpy(one_array(execs.column("id")), np.int64)
    b_execs = rangerows.buckets_of(execs.column("msg"), ids, buckets)
    b_sends = rangerows.buckets_of(sends.column("msg"), None, buckets)
    execs, sends = coded(execs), coded(sends)  # the strings freed before the writes' copies
    if i == 0:  # the parts' schemas (no rows): what a bucket without rows reads
        for part, rows in ((EXECS, execs), (SENDS, sends)):
            pq.write_table(rows.schema.empty_table(), os.path.join(root, part + ".parquet"),
                           **file_options(rows.schema, statistics=False))
    keep = kept is not None and kept.reserve(execs.nbytes + sends.nbytes)
    store = (lambda *a: keep_buckets(kept, *a)) if keep else (lambda *a: write_buckets(root, *a))
    store(EXECS, i, execs, b_execs, buckets)
    del execs  # freed before the sends' copies
    store(SENDS, i, sends, b_sends, buckets)


def coded(rows: pa.Table) -> pa.Table:
    """`rows` with each string column dictionary-encoded: the writes' takes then move 4-byte codes and
    the Parquet writer stores the dictionary as it is instead of hashing every string (the bucket
    steps read these columns as dictionaries either way, _read)."""
    return pa.table([pc.dictionary_encode(one_array(rows.column(f.name))) if pa.types.is_string(f.type)
                     else rows.column(f.name) for f in rows.schema], names=rows.column_names)


def by_bucket(rows: pa.Table, bucket: np.ndarray, buckets: int, own: bool = False) -> Iterator[tuple[int, pa.Table]]:
    """(bucket, its rows) of `rows`, WRITE_CHUNK_ROWS at a time, in row order: each chunk put in bucket
    order by one take and sliced, or, with `own`, each chunk's rows of one bucket taken into buffers of
    their own (kept rows, freed when their bucket is done, whichever other buckets are not). The work
    per row grows neither with the bucket count nor with the range's size, and no copy of the whole
    range is made."""
    for start in range(0, len(rows), WRITE_CHUNK_ROWS):
        piece, codes = rows.slice(start, WRITE_CHUNK_ROWS), bucket[start:start + WRITE_CHUNK_ROWS]
        order = np.argsort(codes.astype(np.int16) if buckets < 2**15 else codes, kind="stable")  # int16: radix
        bounds = np.searchsorted(codes[order], np.arange(buckets + 1))
        order = order.astype(np.int64)
        if not own:
            piece = piece.take(from_numpy(order))
        for b in np.flatnonzero(np.diff(bounds)):
            lo, hi = int(bounds[b]), int(bounds[b + 1])
            yield int(b), piece.take(from_numpy(order[lo:hi])) if own else piece.slice(lo, hi - lo)


def write_buckets(root: str, part: str, i: int, rows: pa.Table, bucket: np.ndarray, buckets: int) -> None:
    """Range i's rows of `part` into one file per bucket that has any (part/bucket=B/rI_0.parquet),
    each chunk's slices (by_bucket) appended to their files as row groups, so that each file keeps
    the range's row order."""
    writers: dict[int, pq.ParquetWriter] = {}
    options = file_options(rows.schema, statistics=False)
    try:
        for b, piece in by_bucket(rows, bucket, buckets):
            if b not in writers:
                folder = os.path.join(root, part, f"bucket={b}")
                os.makedirs(folder, exist_ok=True)
                writers[b] = pq.ParquetWriter(os.path.join(folder, f"r{int(i)}_0.parquet"), rows.schema, **options)
            writers[b].write_table(piece)
    finally:
        for w in writers.values():
            w.close()


def keep_buckets(kept: KeptParts, part: str, i: int, rows: pa.Table, bucket: np.ndarray, buckets: int) -> None:
    """Range i's rows of `part` kept by bucket in `kept` (rows.nbytes of its allowance reserved by the
    caller, charged to the pieces by their rows)."""
    per_row = rows.nbytes / max(len(rows), 1)
    for b, piece in by_bucket(rows, bucket, buckets, own=True):
        kept.put(part, b, i, piece, math.ceil(per_row * len(piece)))


def file_options(schema: pa.Schema, statistics: bool = True) -> dict[str, Any]:
    """How the range and bucket steps' files are written: integers delta-encoded, strings (and the
    dictionaries the bucket steps read them as) by dictionary, then lz4: about a quarter less CPU to
    write and a third less to read than zstd at its fastest level, for files a quarter larger, which
    the spill directory has room for (docs/benchmarks.md, run 29). Without `statistics` (files only
    ever read whole: the range steps' bucket files) no page's min and max are computed."""
    strings = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
               or pa.types.is_dictionary(f.type)]
    return {"compression": "lz4", "use_dictionary": strings, "write_statistics": statistics,
            "column_encoding": {f.name: "DELTA_BINARY_PACKED" for f in schema if pa.types.is_integer(f.type)}}


NATIVE = ("exec_graph_execs", "exec_graph_sends")
"""The engine tables of the one-bucket build (`native`): the partitions without the Parquet round trip."""


def bucket_edges(con: Any, deliveries: pa.Table) -> pa.Table:
    """communication_edges over one bucket's deliveries (paradise.events.bucketjoin)."""
    con.register("bucket_deliveries", deliveries)
    try:
        return con.sql(load_sql("communication_edges")).to_arrow_table()
    finally:
        con.unregister("bucket_deliveries")


def native_graph(con: Any, table: str, run_t0: int) -> pa.Table:
    """The one-bucket build's join (paradise.events.bucketjoin) kept as engine table `table`; the
    NATIVE tables are dropped as soon as they are read, so that the engine's memory holds the graph
    instead of its inputs. Returns the bucket's message edges."""
    try:
        x, s = (con.sql(f"SELECT * FROM {part}").to_arrow_table() for part in NATIVE)
    finally:
        for part in NATIVE:
            con.execute(f"DROP TABLE IF EXISTS {part}")
    graph, deliveries = bucketjoin.join(x, s, run_t0)
    del x, s
    con.register("graph_rows", graph)
    try:
        con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT * FROM graph_rows")
    finally:
        con.unregister("graph_rows")
    del graph
    return bucket_edges(con, deliveries)


def bucket_files(root: str, part: str, b: int) -> list[str]:
    """Bucket b's files of one part (execs or sends), with the empty schema file."""
    return sorted(glob.glob(os.path.join(root, part, f"bucket={int(b)}", "*.parquet"))) + [
        os.path.join(root, part + ".parquet")]


def graph_file(root: str, b: int) -> str:
    return os.path.join(root, GRAPH, f"b{int(b)}.parquet")


def edges_file(root: str, b: int) -> str:
    return os.path.join(root, EDGES, f"b{int(b)}.parquet")


def _read(files: list[str], held: list[tuple[int, pa.Table]] | None = None) -> pa.Table:
    """A bucket's rows of one part: its files (bucket_files: the schema file last, read last) and the
    rows kept for it (`held`: (range, rows)) among them in the order of the ranges' file names, as if
    every range had written its file; strings as their files' dictionaries (decoding them to strings,
    as DuckDB's reader does, costs more than the rest of the read; the takes of the join then move
    codes), on one thread (a step runs beside others)."""
    schema = pq.read_schema(files[-1])
    strings = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type)]
    sources = sorted([(os.path.basename(f), n, f) for n, f in enumerate(files[:-1])]
                     + [(f"r{i}_0.parquet", n, t) for n, (i, t) in enumerate(held or [])], key=lambda s: s[:2])
    return pa.concat_tables([pq.read_table(src, use_threads=False, read_dictionary=strings)
                             if isinstance(src, str) else src for *_, src in [*sources, ("", 0, files[-1])]])


def bucket_step(con: Any, root: str, b: int, run_t0: int, kept: KeptParts | None = None) -> pa.Table:
    """Bucket step B: joins the bucket's execs to their messages' sends (paradise.events.bucketjoin),
    read from its files and the rows `kept` holds for it, into graph/bB.parquet (or into `kept`, when
    its allowance holds the graph rows) and its message edges into edges/bB.parquet (each written
    whole, then renamed, the edges first), then removes the bucket's input files; returns the edges.
    A step run again (its worker died) finds the graph file written and returns the edges file's rows."""
    out, edges_out = graph_file(root, b), edges_file(root, b)
    if os.path.exists(out):
        return pq.read_table(edges_out)
    execs, sends = bucket_files(root, EXECS, b), bucket_files(root, SENDS, b)
    held = (kept.take(EXECS, b), kept.take(SENDS, b)) if kept is not None else ([], [])
    graph, deliveries = bucketjoin.join(_read(execs, held[0]), _read(sends, held[1]), run_t0)
    del held
    edges = bucket_edges(con, deliveries)
    del deliveries
    keep = kept is not None and kept.keep_graph(b, graph)
    for path, rows in ((edges_out, edges), *(() if keep else ((out, graph),))):
        write_whole(path, rows)
    for f in execs[:-1] + sends[:-1]:
        os.remove(f)
    return edges


def graph_view_sql(view: str, files: list[str]) -> str:
    """The statement that makes `view` the union of the graph's bucket files."""
    return f"CREATE OR REPLACE VIEW {view} AS SELECT * FROM read_parquet({_files(files)})"
