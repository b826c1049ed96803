"""After a clean run: fill in send rows' receiver PE from the execution that received them.

A sender does not know where the location manager will deliver an array message, so
`send.peer_pe` (and `peer_coll` for arrays a PE never hosted) is filled after the run by
matching `msg` ids with exec rows. One DuckDB join per file; row order and metadata kept, and the
file's summary (paradise.format.summary) made from the rows as rewritten when a factory is given.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from paradise.format import SCHEMA, WRITE_OPTIONS, conform, read_metadata
from paradise.format.summary import SummarizingWriter, SummaryFactory, summary_for

_RECEIVERS = """
    SELECT msg, min(pe) AS rpe, count(DISTINCT pe) AS npe, min(coll) AS rcoll
    FROM read_parquet($files) WHERE kind = 'exec' AND msg IS NOT NULL GROUP BY msg
"""

_FILL = """
    WITH f AS (SELECT row_number() OVER () AS _rn, * FROM read_parquet($file)),
         r AS ({receivers})
    SELECT f.* EXCLUDE (_rn, peer_pe, peer_coll),
           CASE WHEN f.kind = 'send' AND f.peer_pe IS NULL AND r.npe = 1
                     AND (f.args IS NULL OR (f.args NOT LIKE '%bcast%' AND f.args NOT LIKE '%multicast%'))
                THEN r.rpe ELSE f.peer_pe END::INTEGER AS peer_pe,
           CASE WHEN f.kind = 'send' AND f.peer_coll IS NULL THEN r.rcoll ELSE f.peer_coll END AS peer_coll
    FROM f LEFT JOIN r ON f.kind = 'send' AND f.msg = r.msg
    ORDER BY f._rn
"""


def resolve_peers(trace_dir: str | os.PathLike, summary: SummaryFactory | None = None) -> int:
    """Fills receiver PE/collection of point-to-point sends in every final per-PE file (`summary`:
    makes each file's summary, for a file whose PE measured no clock offsets)."""
    import duckdb

    files = sorted(str(p) for p in Path(trace_dir).glob("pe-*.parquet") if ".part-" not in p.name)
    if not files:
        return 0
    con = duckdb.connect()
    filled = 0
    for f in files:
        meta = pq.read_schema(f).metadata
        table = con.sql(_FILL.format(receivers=_RECEIVERS), params={"file": f, "files": files}).to_arrow_table()
        table = conform(table.select([n for n in SCHEMA.names])).replace_schema_metadata(meta)
        tmp = Path(f).with_name("." + Path(f).name + ".tmp")
        with SummarizingWriter(tmp, table.schema, summary_for(summary, read_metadata(meta)), **WRITE_OPTIONS) as writer:
            writer.write_table(table)
        os.replace(tmp, f)
        filled += table.num_rows
    con.close()
    return filled
