"""Message edges (communication_edges): the exec graph's bucket steps give each bucket's edges from
the send -> exec join they run anyway (paradise.events.partitions, bucketjoin), so no step joins
the trace's sends to its execs a second time; the client merges the buckets' edges by the query's
`-- merge:` rule (an edge's deliveries are split over buckets by message: sums and extremes).
"""

from __future__ import annotations

import pyarrow as pa

from paradise.engines import load_sql
from paradise.engines.merge import merge_partials, parse_merge_rule

QUERY = "communication_edges"
ORDER = ("src_coll", "src_obj", "dst_coll", "dst_obj", "entry", "src_pe", "dst_pe", "src_index", "dst_index",
         "dst_cat")
"""The edges' row order (nulls last): by object pair and entry, then the rest of the key."""


def merged(parts: list[pa.Table]) -> pa.Table:
    """The buckets' edges merged into the trace's, in ORDER."""
    edges = merge_partials(parts, parse_merge_rule(load_sql(QUERY), QUERY), QUERY)
    return edges.sort_by([(k, "ascending") for k in ORDER])

