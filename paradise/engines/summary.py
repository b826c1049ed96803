"""overview_pe from the trace files' summaries (paradise.format.summary), and the builder writers use
to make a file's summary: the same query over the rows as they are written, merged by its merge rule,
so the footer holds what the engines would compute from the file."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from paradise.engines import load_sql
from paradise.engines.merge import MergeRule, merge_partials, parse_merge_rule
from paradise.format.summary import SUMMARY_SCHEMA, encode_summary
from paradise.store import TraceHandle
from paradise.store.connection import connect

QUERY = "overview_pe"
"""The query whose rows a summary holds."""
MERGE_EVERY = 64
"""Partials a builder keeps before merging them into one (a file's distinct keys, not its rows)."""


def _rule() -> MergeRule:
    return parse_merge_rule(load_sql(QUERY), QUERY)


def merged(parts: list[pa.Table]) -> pa.Table:
    """Partial overview_pe rows (of files, or of chunks of one) combined as the query over all their rows."""
    if len(parts) == 1:
        return parts[0].cast(SUMMARY_SCHEMA)
    return merge_partials(parts, _rule(), QUERY).cast(SUMMARY_SCHEMA)


def summarized(trace: TraceHandle, files: list[str], name: str = QUERY, params: dict[str, Any] | None = None
               ) -> pa.Table | None:
    """Query `name` over `files` from their summaries when it is overview_pe without parameters and
    every file has one (and no clock correction); else None: the engine reads the rows."""
    if name != QUERY or params:
        return None
    parts = trace.summaries(files)
    if not parts:
        return None
    return merged(parts)


class SummaryBuilder:
    """A file's summary built from its rows as the writer writes them, chunk by chunk."""

    def __init__(self) -> None:
        self._con = connect(threads=1)  # a chunk at a time, beside the writer's own work
        self._text = load_sql(QUERY)
        self._parts: list[pa.Table] = []

    def add(self, rows: pa.Table | pa.RecordBatch) -> None:
        """Rows the writer is writing into the file (any chunk: the merge is exact)."""
        if not rows.num_rows:
            return
        self._con.register("events", rows)
        try:
            self._parts.append(self._con.sql(self._text).to_arrow_table())
        finally:
            self._con.unregister("events")
        if len(self._parts) >= MERGE_EVERY:
            self._parts = [merged(self._parts)]

    def metadata(self) -> dict[bytes, bytes]:
        """The key-value metadata entry to add to the file's footer (ParquetWriter.add_key_value_metadata)."""
        rows = merged(self._parts) if self._parts else SUMMARY_SCHEMA.empty_table()
        self._con.close()
        return encode_summary(rows)
