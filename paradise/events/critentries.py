"""The critical path's entry sums (events_critical_entries) in ranges of exec ids, so that no
process holds the path's rows: a step per bucket of the exec graph writes the path's rows it holds
(events_critical_rows) into one Parquet file per id range under a partition directory, a step per
range sums its rows by entry, and the client merges the ranges' sums (the query's `-- merge:` rule).

An exec's entry sums read the exec before it on its PE (id - 1: ids are consecutive on a PE), so
each row goes to its own range and, when id + 1 starts the next range, to that one too; a range
sums only the path's execs within it. Ranges hold about equal shares of the path's execs, as many
as the engine's step memory needs (RANGE_ROW_BYTES each) and, on a long path, at least one per
bucket, so that a cluster's workers share them.

Layout of the partition directory: range=R/bB.parquet (bucket B's rows of range R).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paradise.engines import load_sql
from paradise.engines.merge import merge_partials, parse_merge_rule, query_tables
from paradise.events import graphread, partitions

QUERY = "events_critical_entries"
ROWS = "critical_rows"
"""The relation events_critical_entries reads: the path's rows of one range."""
RANGE_ROW_BYTES = 256
"""Memory a range step needs per path row (the row as DuckDB holds it, and its share of the join)."""
MIN_RANGE_EXECS = 100_000
"""Path execs below which one range does (a step costs more than summing them)."""
ID_MIN, ID_MAX = -(2**63), 2**63 - 1


def cuts(lo: list[int], hi: list[int], ranges: int) -> np.ndarray:
    """The first ids of ranges 1..ranges-1 (range 0 starts at ID_MIN, the last ends at ID_MAX),
    each range holding about an equal share of the path's execs (segments [lo, hi])."""
    lo_a, hi_a = np.asarray(lo, np.int64), np.asarray(hi, np.int64)
    order = np.argsort(lo_a, kind="stable")
    lo_a, hi_a = lo_a[order], hi_a[order]
    n = hi_a - lo_a + 1
    cum = np.cumsum(n)
    total = int(cum[-1]) if len(cum) else 0
    out = []
    for j in range(1, ranges):
        target = total * j // ranges  # the path's target-th exec (0-based, in id order) starts range j
        s = int(np.searchsorted(cum, target, side="right"))
        if s < len(n):
            out.append(int(lo_a[s] + target - (cum[s] - n[s])))
    return np.unique(np.asarray(out, np.int64))


def rows_step(con: Any, files: list[str] | None, root: str, b: int, lo: list[int], hi: list[int],
              cuts: np.ndarray) -> tuple[list[int], pa.Table]:
    """Bucket step B: the path's rows in the bucket (events_critical_rows) into range=R/bB.parquet
    for the range R of each row's id and of id + 1; returns the ranges written and the rows' schema."""
    t = graphread.reader_step(con, "events_critical_rows", files, {"lo": lo, "hi": hi})
    ids = t.column("id").to_numpy().astype(np.int64, copy=False)
    own, nxt = np.searchsorted(cuts, ids, side="right"), np.searchsorted(cuts, ids + 1, side="right")
    written = [int(r) for r in np.unique(np.concatenate([own, nxt]))]
    for r in written:
        folder = os.path.join(root, f"range={r}")
        os.makedirs(folder, exist_ok=True)
        pq.write_table(t.filter(pa.array((own == r) | (nxt == r))), os.path.join(folder, f"b{int(b)}.parquet"))
    return written, t.schema.empty_table()


def entries_step(con: Any, files: list[str], params: dict[str, Any]) -> pa.Table:
    """Range step: events_critical_entries over the range's rows (`files`), `params` bound."""
    con.execute(f"CREATE OR REPLACE TEMP VIEW {ROWS} AS SELECT * FROM read_parquet({partitions._files(files)})")
    try:
        return con.sql(load_sql(QUERY), params=params).to_arrow_table()
    finally:
        con.execute(f"DROP VIEW IF EXISTS {ROWS}")


def whole_step(con: Any, files: None, params: dict[str, Any]) -> pa.Table:
    """One step over the engine's one-bucket table: the path's rows and their entry sums, no range files."""
    rows = graphread.reader_step(con, "events_critical_rows", files, {"lo": params["lo"], "hi": params["hi"]})
    return query_tables({ROWS: rows}, load_sql(QUERY), id_lo=ID_MIN, id_hi=ID_MAX, **params)


def path_entries(engine: Any, parts: tuple[Any, ...], lo: list[int], hi: list[int], cost: dict[str, float]
                 ) -> pa.Table:
    """events_critical_entries over the path (segments [lo, hi]) with the message cost `cost`
    (a_ns, ns_per_byte, local_ns): range steps over the graph's buckets (`parts`; none: the
    engine's one-bucket table), merged."""
    execs = int(np.sum(np.asarray(hi, np.int64) - np.asarray(lo, np.int64) + 1)) if lo else 0
    by_memory = math.ceil(execs * RANGE_ROW_BYTES / max(engine.step_memory(), 1))
    ranges = max(1, by_memory, min(len(parts), math.ceil(execs / MIN_RANGE_EXECS)))
    params = {"lo": lo, "hi": hi, **cost}
    if not parts and ranges == 1:  # the engine's one-bucket table and one range: one step, no files
        return engine.run_steps(whole_step, [{"files": None, "params": params}], files=[[]])[0]
    at = cuts(lo, hi, ranges)
    root = engine.scratch_dir("critrows-")
    items = [{"files": [f], "root": root, "b": b, "lo": lo, "hi": hi, "cuts": at} for b, f in enumerate(parts)] or [
        {"files": None, "root": root, "b": 0, "lo": lo, "hi": hi, "cuts": at}]
    with partitions.scratch_writes(engine):
        written = engine.run_steps(rows_step, items, files=[[] for _ in items])
    used = sorted({r for w, _ in written for r in w})
    if not used:  # no path: the query over no rows
        return query_tables({ROWS: written[0][1]}, load_sql(QUERY), id_lo=ID_MIN, id_hi=ID_MAX, **params)
    first = [ID_MIN, *at.tolist()]
    last = [c - 1 for c in at.tolist()] + [ID_MAX]
    steps = [{"files": sorted(_range_files(root, r)), "params": {**params, "id_lo": first[r], "id_hi": last[r]}}
             for r in used]
    sums = engine.run_steps(entries_step, steps, files=[[] for _ in steps])
    return merge_partials(sums, parse_merge_rule(load_sql(QUERY), QUERY), QUERY)


def _range_files(root: str, r: int) -> list[str]:
    folder = os.path.join(root, f"range={int(r)}")
    return [os.path.join(folder, f) for f in os.listdir(folder)]
