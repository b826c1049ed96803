"""A trace file's summary: the rows of the overview's first query (paradise/sql/overview_pe.sql) over
that file, written into its footer by the writer that made it, so that the first report reads each
file's footer instead of its rows (as Projections reads its runtime-written .sum files).

The summary is a cache of the rows, never a second source of truth: a reader uses it only when it
decodes, has the query's columns and agrees with the footer (its row count equals the file's, its
earliest t0 and its smallest and largest pe, kind, name, coll and cat equal the row groups'
statistics where they have them: a file rewritten after filtering, shifting or renaming rows, with the old
key-value metadata carried over, fails these), and otherwise reads the rows. docs/trace-format.md
says the key and its encoding."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

KEY = b"paradise.summary.overview_pe.v1"
"""Parquet key-value metadata key: base64 of an Arrow IPC stream of SUMMARY_SCHEMA rows."""
SUMMARY_SCHEMA = pa.schema([
    ("kind", pa.string()), ("pe", pa.int32()), ("name", pa.string()), ("coll", pa.string()),
    ("cat", pa.string()), ("peer_pe", pa.int32()), ("size_log2", pa.int32()), ("rows", pa.int64()),
    ("t_first", pa.int64()), ("t_last", pa.int64()), ("dur_ns", pa.int64()), ("max_ns", pa.int64()),
    ("bytes", pa.int64()), ("min_bytes", pa.int64()), ("max_bytes", pa.int64()),
])
"""overview_pe's output columns (a test checks them against the engines' result)."""
MAX_ENCODED = 64 << 20
"""A summary larger than this (base64 bytes) is not read: a damaged or hostile footer."""
MIN_ROWS = 1_000_000
"""The Kineto and Nsight Systems importers write summaries only for an output of at least this many
rows: below it the first report reads the rows in hundredths of a second, and making a summary
would load DuckDB (a tenth of a second) into an import whose start-up is kept small."""
CHECKED_STRINGS = ("kind", "name", "coll", "cat")
"""String columns whose footer statistics a summary's values must agree with."""


class SummaryWriter(Protocol):
    """What a writer feeds its rows to while writing a file, and asks for the footer entry at the end
    (paradise.engines.summary.SummaryBuilder: the format's writers take it as a factory, since the
    query that makes it lives above the format)."""

    def add(self, rows: pa.Table) -> None: ...

    def metadata(self) -> dict[bytes, bytes]: ...


SummaryFactory = Callable[[], SummaryWriter]


class SummarizingWriter(pq.ParquetWriter):
    """A Parquet writer whose file carries its summary: every table it writes is added to `summary`
    (None: the file gets none), whose footer entry goes in when the writer closes. A writer left by
    an exception (its `with` block) closes without one, so a summary never describes rows that were
    not all written."""

    def __init__(self, where: Any, schema: pa.Schema, summary: SummaryWriter | None = None, **options: Any) -> None:
        super().__init__(where, schema, **options)
        self._summary = summary

    def write_table(self, table: pa.Table, row_group_size: int | None = None) -> None:
        if self._summary is not None:
            self._summary.add(table)
        super().write_table(table, row_group_size)

    def close(self) -> None:
        summary, self._summary = self._summary, None
        try:
            if summary is not None and self.is_open:
                self.add_key_value_metadata(summary.metadata())
        finally:
            super().close()  # the file is closed whatever the summary raised

    def __exit__(self, exc_type: type[BaseException] | None, *args: Any) -> bool:
        if exc_type is not None:
            self._summary = None
        return super().__exit__(exc_type, *args)


def has_offsets(meta: dict[str, Any] | None) -> bool:
    """Whether a file's paradise metadata holds clock offsets: the reader corrects its times, so a
    summary of them as written would never be used (writers skip it)."""
    clock = (meta or {}).get("clock")
    return isinstance(clock, dict) and bool(clock.get("offsets"))


def summary_for(factory: SummaryFactory | None, meta: dict[str, Any] | None) -> SummaryWriter | None:
    """The summary to build for a file with paradise metadata `meta`: none without a factory, nor for
    a file whose PEs measured clock offsets (has_offsets)."""
    return factory() if factory is not None and not has_offsets(meta) else None


def encode_summary(rows: pa.Table) -> dict[bytes, bytes]:
    """The key-value metadata entry carrying `rows` (overview_pe's rows of the whole file)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, SUMMARY_SCHEMA, options=pa.ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(rows.select(SUMMARY_SCHEMA.names).cast(SUMMARY_SCHEMA))
    return {KEY: base64.b64encode(sink.getvalue().to_pybytes())}


def _decode(raw: bytes) -> pa.Table | None:
    if len(raw) > MAX_ENCODED:
        return None
    try:
        data = base64.b64decode(raw, validate=True)
        table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
    except (binascii.Error, ValueError, pa.ArrowException):
        return None
    return table if table.schema.equals(SUMMARY_SCHEMA) else None


def _stats_range(meta: pq.FileMetaData, col: int) -> tuple[object, object] | None:
    """The column's smallest and largest value over the row groups' statistics; None when a row
    group with values has none (nothing to check against)."""
    lo = hi = None
    for i in range(meta.num_row_groups):
        chunk = meta.row_group(i)
        stats = chunk.column(col).statistics
        if stats is not None and stats.has_null_count and stats.null_count == chunk.num_rows:
            continue  # only nulls: no min or max to give
        if stats is None or not stats.has_min_max:
            return None
        lo = stats.min if lo is None or stats.min < lo else lo
        hi = stats.max if hi is None or stats.max > hi else hi
    return lo, hi


def _agrees(table: pa.Table, pf: pq.ParquetFile) -> bool:
    import pyarrow.compute as pc  # only where a summary is read (importers load none of it)

    meta = pf.metadata
    counts = pc.min_max(table["rows"]).as_py()
    if (pc.sum(table["rows"]).as_py() or 0) != meta.num_rows or (counts["min"] is not None and counts["min"] < 1):
        return False
    names = pf.schema_arrow.names
    checks = [("t0", table["t_first"], True), ("pe", table["pe"], False)] + [(c, table[c], False) for c in CHECKED_STRINGS]
    for column, values, low_only in checks:
        if column not in names:
            return False
        expected = _stats_range(meta, pf.schema_arrow.get_field_index(column))
        if expected is None:
            continue
        got = pc.min_max(values).as_py()
        if got["min"] != expected[0] or (not low_only and got["max"] != expected[1]):
            return False
    return True


def read_summary(pf: pq.ParquetFile) -> pa.Table | None:
    """The file's summary rows when it carries one that agrees with its footer, else None."""
    raw = (pf.metadata.metadata or {}).get(KEY)
    if raw is None:
        return None
    table = _decode(raw)
    if table is None:
        return None
    try:
        agrees = _agrees(table, pf)
    except (ValueError, TypeError, pa.ArrowException):  # statistics that do not decode (not UTF-8, ...)
        return None
    return table if agrees else None
