"""Message edges (communication_edges) on an engine whose steps run in processes of their own
(Dask): no process joins every send to every exec. Split steps (one per group of the trace's files)
write the send and exec rows the query reads into `msg`-hash buckets; a bucket step runs the query
over one bucket's rows (a message's send and exec rows all land in its bucket, so the per-message
parts of the query, first send and fan-out, are exact) and returns its edges; the client merges
the buckets' edges by EDGE_MERGE. The embedded engine runs the query whole in its own connection,
whose join spills under its memory limit.

Layout of the partition directory (on a path every worker sees):
  sends/bucket=B/gI_0.parquet, execs/bucket=B/gI_0.parquet   group I's rows of bucket B
  sends.parquet, execs.parquet                             no rows: the schemas, for a bucket without files
  edges/bB.parquet                                         bucket B's edges (its input files are then removed)
"""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from paradise.engines import load_sql
from paradise.engines.merge import merge_partials, parse_merge_rule
from paradise.events import partitions

QUERY = "communication_edges"
SEND_COLUMNS = "msg, t0, pe, coll, obj, index, peer_pe, peer_coll, peer_obj, bytes, name"
EXEC_COLUMNS = "msg, pe, coll, obj, index, name, cat"
"""The columns communication_edges reads of each kind of row."""
EDGE_MERGE = "-- merge: group by the key columns; sum(msgs, bytes, bcast_msgs) min(min_bytes) max(max_bytes)"
"""How the buckets' edges combine: an edge's deliveries are split over buckets by message."""
ORDER = ("src_coll", "src_obj", "dst_coll", "dst_obj", "entry")
"""communication_edges' row order (nulls last)."""
EDGE_ROW_BYTES = 256
"""Memory a bucket step needs per send or exec row of its bucket (the join's hash tables)."""


def split_step(con: Any, root: str, i: int, buckets: int) -> None:
    """Split step I: the step's files' send and exec rows (with a `msg`), by bucket, under `root`."""
    for part, kind, cols in (("sends", "send", SEND_COLUMNS), ("execs", "exec", EXEC_COLUMNS)):
        rows = (f"SELECT {cols}, CAST(hash(msg) % {int(buckets)} AS INTEGER) AS bucket FROM events "
                f"WHERE kind = '{kind}' AND msg IS NOT NULL")
        partitions.copy_by_bucket(con, rows, root, part, f"g{int(i)}", schema_file=i == 0)


def bucket_step(con: Any, root: str, b: int) -> pa.Table:
    """Bucket step B: communication_edges over the bucket's rows (a temp view `events` of them),
    kept as edges/bB.parquet (written whole, then renamed) before the bucket's input files are
    removed, so that the directory holds about one copy of the rows; a step run again (its worker
    died) returns that file's edges."""
    out = os.path.join(root, "edges", f"b{int(b)}.parquet")
    if os.path.exists(out):
        return pq.read_table(out)
    sends, execs = (partitions.bucket_files(root, part, b) for part in ("sends", "execs"))
    con.execute("CREATE OR REPLACE TEMP VIEW events AS "
                f"SELECT 'send' AS kind, * FROM read_parquet({partitions._files(sends)}, hive_partitioning = false) "
                f"UNION ALL BY NAME SELECT 'exec' AS kind, * FROM read_parquet({partitions._files(execs)}, "
                "hive_partitioning = false)")
    try:
        edges = con.sql(load_sql(QUERY)).to_arrow_table()
    finally:
        con.execute("DROP VIEW IF EXISTS events")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    pq.write_table(edges, out + ".tmp")
    os.replace(out + ".tmp", out)
    for f in sends[:-1] + execs[:-1]:
        os.remove(f)
    return edges


def message_edges(engine: Any) -> pa.Table:
    """communication_edges of the whole trace: the engine's own query where it runs in one
    connection (native_steps), else in buckets sized from the engine's step memory (at least one
    per group of files, so that every worker joins a share)."""
    if getattr(engine, "native_steps", False):
        return engine.query(QUERY)
    root, buckets = partitions.split_files(engine, split_step, EDGE_ROW_BYTES, "msgedges-")
    parts = engine.run_steps(bucket_step, [{"root": root, "b": b} for b in range(buckets)],
                             files=[[] for _ in range(buckets)])
    edges = merge_partials(parts, parse_merge_rule(EDGE_MERGE, QUERY), QUERY)
    return edges.sort_by([(k, "ascending") for k in ORDER])  # nulls last, as the query orders
