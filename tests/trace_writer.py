"""Crash-safe per-PE Parquet writer of row tuples, for traces written from Python in one process
(tests' synthetic traces, bench/writer_close.py): it writes the part files the store reads.
paradise's own tracers do not use it: they append raw rows to a spool (tracers/spool.py) that is
converted after the run (paradise/format/compact.py).

Parquet needs a footer, so a file still open when its process is killed is unreadable.
The writer therefore flushes each batch of rows as its own small, complete part file
(`pe-00003.part-000007.parquet`); a killed run leaves every flushed part readable. A clean
`close()` compacts the parts into `pe-00003.parquet` in time order (t0; tracers append an
execution when it ends, after the sends it made: paradise.format.order), written to a temporary
name, then renamed, then the parts removed, so a crash during compaction loses nothing either.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from paradise.format import SCHEMA, WRITE_OPTIONS, make_metadata, row_tuple
from paradise.format.schema import tuple_rows_table

FLUSH_ROWS = 50_000
"""Rows buffered before a flush: ~2 MB of Arrow, well under a tracer's memory budget."""
FLUSH_INTERVAL_S = 2.0
"""Longest time rows wait in memory (checked on append), bounding what a crash can lose."""

PART_WRITE = {"compression": "none", "write_statistics": False}
"""Part files are temporary (close() compacts them into one zstd file; only a killed run keeps
them), so they are written uncompressed and without column statistics: zstd and statistics were
about half of a part's fixed Parquet cost (~1.3 of ~2.5 ms CPU for a 2,000-row part of 24 columns)."""

FINAL_WRITE = WRITE_OPTIONS
"""How a tracer's final (compacted) per-PE file is written: the format's layout."""

PART_RE = re.compile(r"^(?P<stem>.+?)\.part-(?P<seq>\d+)\.parquet$")


@contextmanager
def _exclusive_tmp(directory: Path, target: Path) -> Iterator[BinaryIO]:
    """A temporary file created exclusively in `directory` (never through a planted link), renamed
    onto `target` when the block succeeds and removed when it fails."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.replace(name, target)
    finally:
        if os.path.lexists(name):
            os.unlink(name)


def pe_file_stem(pe: int) -> str:
    return f"pe-{pe:05d}"


class TraceWriter:
    """Buffers event rows (tuples in COLUMN_NAMES order, or dicts) and flushes Parquet parts."""

    def __init__(
        self,
        directory: str | os.PathLike,
        pe: int,
        *,
        flush_rows: int = FLUSH_ROWS,
        flush_interval_s: float = FLUSH_INTERVAL_S,
        **metadata: Any,
    ) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.pe = pe
        self.stem = pe_file_stem(pe)
        self.flush_rows = flush_rows
        self.flush_interval_ns = int(flush_interval_s * 1e9)
        self.metadata = dict(metadata, pe=pe)
        self._rows: list[tuple] = []
        self._parts: list[Path] = []
        self._last_flush = time.monotonic_ns()
        self._closed = False
        self.rows_written = 0

    # Hot path: one list append and, every 1024 rows, one clock read.
    def append(self, row: tuple) -> None:
        """Appends one row given as a tuple in COLUMN_NAMES order (missing tail = null)."""
        rows = self._rows
        rows.append(row)
        n = len(rows)
        if n >= self.flush_rows or (
            (n & 1023) == 0 and time.monotonic_ns() - self._last_flush > self.flush_interval_ns
        ):
            self.flush()

    def append_dict(self, **fields: Any) -> None:
        """Convenience for rare events: keyword fields by column name."""
        self.append(row_tuple(**fields))

    def set_metadata(self, **fields: Any) -> None:
        """Updates metadata for the parts flushed from now on and the final file."""
        self.metadata.update(fields)

    def _table(self, rows: list[tuple]) -> pa.Table:
        return tuple_rows_table(rows).replace_schema_metadata(make_metadata(**self.metadata))

    def _pending_table(self) -> pa.Table | None:
        """The buffered rows as one table, taken out of the buffer (None when there are none)."""
        if not self._rows:
            return None
        rows, self._rows = self._rows, []
        return self._table(rows)

    def flush(self) -> None:
        """Writes the buffered rows as one complete part file."""
        self._last_flush = time.monotonic_ns()
        table = self._pending_table()
        if table is None:
            return
        part = self.directory / f"{self.stem}.part-{len(self._parts):06d}.parquet"
        with _exclusive_tmp(self.directory, part) as fh:
            pq.write_table(table, fh, **PART_WRITE)
        self._parts.append(part)
        self.rows_written += table.num_rows

    def close(self, complete: bool = True) -> Path:
        """Flushes, then compacts the parts into one file marked complete (or not)."""
        if self._closed:
            return self.directory / f"{self.stem}.parquet"
        # imports pyarrow.compute (~0.1 s): only when compacting
        from paradise.format.order import time_ordered

        self.flush()
        self.metadata["complete"] = complete
        schema = SCHEMA.with_metadata(make_metadata(**self.metadata))
        final = self.directory / f"{self.stem}.parquet"
        fd, scratch = tempfile.mkstemp(prefix=f".{self.stem}.order.", suffix=".tmp", dir=self.directory)
        os.close(fd)
        # ParquetFile, not read_table: read_table imports pandas (~1 s) via pyarrow.dataset
        parts = (pq.ParquetFile(part).read() for part in self._parts)
        with _exclusive_tmp(self.directory, final) as fh, pq.ParquetWriter(fh, schema, **FINAL_WRITE) as out:
            for table in time_ordered(parts, schema, scratch):  # rows were appended as events ended
                out.write_table(table)
            if not self._parts:
                out.write_table(SCHEMA.empty_table().cast(schema))
        for part in self._parts:
            part.unlink(missing_ok=True)
        self._closed = True
        return final

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(complete=exc_type is None)
