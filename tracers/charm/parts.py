"""The charm tracer's writer: a PE's packed rows (tracers/charm/rowbuf.py) appended to its spool.

A flush takes the recorder's buffer (no copy with the native recorder) and hands it, with the
strings interned since the last flush, to one write() (tracers.spool): no Arrow, no numpy and no
Parquet on the program's path. The launcher turns the spool into `pe-NNNNN.parquet` after the run
(paradise.format.compact); what a killed run flushed stays in the spool and is converted the same way.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from paradise.format import row_tuple
from tracers.charm.rowbuf import LAYOUT, PyRecorder, Strings
from tracers.spool import Spool

FILL = {"tid": 0}
"""Columns every packed row holds the same value in (the rest not in LAYOUT are null)."""


class PackedWriter:
    """One PE's spool writer: packed rows from a recorder, rare rows as tuples (COLUMN_NAMES order)."""

    def __init__(self, directory, pe: int, strings: Strings, recorder=None, **metadata: Any) -> None:
        self.recorder = recorder if recorder is not None else PyRecorder()
        self.strings = strings
        self.pe = pe
        self.metadata = dict(metadata, pe=pe)
        self.spool = Spool(directory, f"pe-{pe:05d}", LAYOUT, FILL, self.metadata)
        self._rows: list[tuple] = []
        self._strings_sent = 0
        self._last_flush = time.monotonic_ns()
        self._closed = False
        self.rows_written = 0
        self.close_s: float | None = None  # seconds close() took (reported apart from the program's time)

    def pending(self) -> int:
        return len(self.recorder) + len(self._rows)

    def append(self, row: tuple) -> None:
        """A rare row, a tuple in COLUMN_NAMES order (missing tail = null): written with the next flush."""
        self._rows.append(row)

    def append_dict(self, **fields: Any) -> None:
        self.append(row_tuple(**fields))

    def set_metadata(self, **fields: Any) -> None:
        """Metadata from here on (the converted file holds the last value of each field)."""
        self.metadata.update(fields)
        self.spool.meta(fields)

    def flush(self) -> None:
        """Appends the rows buffered so far to the spool: one write() of the recorder's buffer."""
        self._last_flush = time.monotonic_ns()
        if not len(self.recorder) and not self._rows:
            return
        data = self.recorder.take()
        texts = self.strings.texts
        new, self._strings_sent = texts[self._strings_sent:], len(texts)
        rows, self._rows = self._rows, []
        self.spool.write(data, new, rows)
        self.rows_written += len(data) // (8 * len(LAYOUT)) + len(rows)

    def close(self, complete: bool = True) -> Path:
        """Flushes and closes the spool (marked complete or not); its time is close_s."""
        if not self._closed:
            t0 = time.monotonic()
            try:
                self.flush()
                self.spool.close(complete)
                self.metadata["complete"] = complete
            finally:
                self._closed = True
                self.close_s = time.monotonic() - t0
        return self.spool.path
