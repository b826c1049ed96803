"""Parquet part files of the charm tracer's packed rows (tracers/charm/rowbuf.py).

The program's thread only takes the recorder's buffer (no copy with the native recorder); a
background thread views it as an int64 matrix (numpy), builds Arrow columns from the buffers and
writes the part file. A run short enough never to flush writes its one final file directly at close.
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paradise.format import SCHEMA, make_metadata
from tracers.charm.rowbuf import LAYOUT, NULL, Strings
from tracers.writer import FINAL_WRITE, TraceWriter, _exclusive_tmp


def _ints(values: np.ndarray, mask: np.ndarray, typ: pa.DataType, np_type) -> pa.Array:
    """Arrow ints straight from numpy buffers (pa.array(ndarray) would import pandas: ~1 s)."""
    data = pa.py_buffer(np.ascontiguousarray(values.astype(np_type, copy=False)))
    nulls = int(mask.sum())
    valid = pa.py_buffer(np.packbits(~mask, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(typ, len(values), [valid, data], null_count=nulls)


def _strings(texts: list[str]) -> pa.Array:
    """Arrow strings from buffers (pa.array on a list would import pandas too)."""
    encoded = [t.encode() for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return pa.Array.from_buffers(pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))])


def _texts(strings: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bytes of all texts, start of each, length of each) of a string table as numpy arrays."""
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32, count=len(strings) + 1)
    blob = strings.buffers()[2]
    data = np.frombuffer(blob, dtype=np.uint8) if blob is not None else np.zeros(0, dtype=np.uint8)
    return data, offsets[:-1].astype(np.int64), np.diff(offsets).astype(np.int64)


def _string_column(values: np.ndarray, mask: np.ndarray, strings: pa.Array) -> pa.Array:
    """A string column from codes by gathering the texts' bytes (no pyarrow.compute: its import
    costs ~0.1-0.2 s, paid at the end of every traced run)."""
    data, starts, lens = _texts(strings)
    codes = np.where(mask, 0, values)
    row_lens = np.where(mask, 0, lens[codes] if len(lens) else 0)
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(row_lens, out=offsets[1:])
    total = int(offsets[-1])
    src = np.repeat(starts[codes] - offsets[:-1], row_lens) + np.arange(total) if total else np.zeros(0, np.int64)
    nulls = int(mask.sum())
    valid = pa.py_buffer(np.packbits(~mask, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(pa.string(), len(values), [valid, pa.py_buffer(offsets), pa.py_buffer(data[src])],
                                 null_count=nulls)


def _column(values: np.ndarray, typ: pa.DataType, strings: pa.Array) -> pa.Array:
    mask = values == NULL
    if pa.types.is_string(typ):
        return _string_column(values, mask, strings)
    if pa.types.is_dictionary(typ):
        idx = _ints(np.where(mask, 0, values), mask, pa.int32(), np.int32)
        return pa.DictionaryArray.from_arrays(idx, strings)
    if typ == pa.int32():
        return _ints(values, mask, typ, np.int32)
    if typ == pa.int64():
        return _ints(values, mask, typ, np.int64)
    return _ints(values, mask, pa.int64(), np.int64).cast(typ)


PART_NOTE = """Part files are written uncompressed and without column statistics: ~240 instead of
~380 ns per row on the traced program's own thread (measured on 50 000 rows). They are temporary:
close() compacts them into one zstd file; only a killed run keeps them (~144 bytes per row)."""


class PackedWriter(TraceWriter):
    """TraceWriter that also takes the packed rows of a recorder (rare rows still go through append)."""

    def __init__(self, directory, pe: int, strings: Strings, recorder=None, **metadata) -> None:
        super().__init__(directory, pe, **metadata)
        from tracers.charm.rowbuf import PyRecorder

        self.recorder = recorder if recorder is not None else PyRecorder()
        self.strings = strings
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list[Future] = []
        self._submitted = 0
        self.close_s: float | None = None  # seconds close() took (reported apart from the program's time)

    def pending(self) -> int:
        return len(self.recorder) + len(self._rows)

    def _packed_table(self, data: bytes) -> pa.Table:
        return self._packed_table_of(data, self.strings)

    @staticmethod
    def _packed_table_of(data: bytes, table: Strings, in_time_order: bool = False) -> pa.Table:
        """The rows as an Arrow table; `in_time_order`: sorted by t0 first (stable: equal starts
        keep the order they were recorded in, as paradise.format.order sorts)."""
        arr = np.frombuffer(data, dtype="<i8").reshape(-1, len(LAYOUT))
        if in_time_order:
            arr = arr[np.argsort(arr[:, LAYOUT.index("t0")], kind="stable")]
        by_field = np.ascontiguousarray(arr.T)  # one transposing copy: every column contiguous
        strings = _strings(table.texts)
        n = arr.shape[0]
        cols = []
        for field in SCHEMA:
            if field.name in LAYOUT:
                cols.append(_column(by_field[LAYOUT.index(field.name)], field.type, strings))
            elif field.name == "tid":
                cols.append(_ints(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool), pa.int64(), np.int64))
            else:
                cols.append(pa.nulls(n, field.type))
        return pa.Table.from_arrays(cols, schema=SCHEMA)

    def flush(self) -> None:
        """Hands the rows buffered so far to the writer thread, which writes them as one part file.

        The program's thread only takes the recorder's buffer; building the Arrow table and the
        Parquet write (which releases the GIL) run on one background thread, in order, so a
        flush overlaps the program instead of stopping it (~0.5 us per row when inline)."""
        self._last_flush = time.monotonic_ns()
        if not len(self.recorder) and not self._rows:
            return
        self._check()
        data = self.recorder.take()
        rows, self._rows = self._rows, []
        texts = self.strings.texts[:]  # append-only table: a copy is a consistent snapshot
        part = self.directory / f"{self.stem}.part-{self._submitted:06d}.parquet"
        self._submitted += 1
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="paradise-flush")
        self._futures.append(self._pool.submit(self._write_part, data, rows, texts, dict(self.metadata), part))

    def _write_part(self, data: bytes, rows: list, texts: list[str], metadata: dict, part: Path) -> None:
        table = self._rows_table(data, rows, texts, metadata)
        tmp = part.with_suffix(".tmp")
        pq.write_table(table, tmp, compression="none", write_statistics=False)  # see PART_NOTE
        os.replace(tmp, part)
        self._parts.append(part)
        self.rows_written += table.num_rows

    def _rows_table(self, data: bytes, rows: list, texts: list[str], metadata: dict) -> pa.Table:
        tables = []
        if data:
            strings = Strings()
            strings.texts = texts
            tables.append(self._packed_table_of(data, strings))
        if rows:
            tables.append(self._table(rows).cast(SCHEMA))
        if not tables:
            tables.append(SCHEMA.empty_table())
        table = pa.concat_tables(tables).unify_dictionaries()
        return table.replace_schema_metadata(make_metadata(**metadata))

    def _check(self) -> None:
        """Re-raises a failed background write here, on the program's thread."""
        while self._futures and self._futures[0].done():
            self._futures.pop(0).result()

    def drain(self) -> None:
        """Waits for every submitted part file (before compaction, metadata changes, exit)."""
        while self._futures:
            self._futures.pop(0).result()

    def close(self, complete: bool = True) -> Path:
        """Flushes, waits for the writer thread, then compacts (TraceWriter.close); its time is close_s.

        A run that never flushed writes its rows straight into the final file: no part, no compaction."""
        if self._closed:
            return super().close(complete)
        t0 = time.monotonic()
        try:
            if self._submitted == 0:
                return self._write_final_directly(complete)
            self.flush()
            try:
                self.drain()
            finally:
                if self._pool is not None:
                    self._pool.shutdown(wait=True)
                    self._pool = None
            return super().close(complete)
        finally:
            self.close_s = time.monotonic() - t0

    def _write_final_directly(self, complete: bool) -> Path:
        """Rows recorded as events ended go into time order here: packed rows alone (the usual
        case) by a numpy sort of the buffer in memory (it is one buffer: at most a flush's worth),
        with other rows through paradise.format.order (whose pyarrow.compute import costs ~0.1 s)."""
        self.metadata["complete"] = complete
        data = self.recorder.take()
        rows, self._rows = self._rows, []
        final = self.directory / f"{self.stem}.parquet"
        if not rows:
            table = self._packed_table_of(data, self._snapshot(), in_time_order=True)
            table = table.replace_schema_metadata(make_metadata(**self.metadata))
            with _exclusive_tmp(self.directory, final) as fh:
                pq.write_table(table, fh, **FINAL_WRITE)
        else:
            from paradise.format.order import time_ordered

            table = self._rows_table(data, rows, self.strings.texts[:], self.metadata)
            fd, scratch = tempfile.mkstemp(prefix=f".{self.stem}.order.", suffix=".tmp", dir=self.directory)
            os.close(fd)
            with (_exclusive_tmp(self.directory, final) as fh,
                  pq.ParquetWriter(fh, table.schema, **FINAL_WRITE) as out):
                for ordered in time_ordered([table], table.schema, scratch):  # rows were recorded as events ended
                    out.write_table(ordered)
        self.rows_written += table.num_rows
        self._closed = True
        return final

    def _snapshot(self) -> Strings:
        strings = Strings()
        strings.texts = self.strings.texts[:]
        return strings
