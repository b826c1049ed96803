"""Packed event rows: one `struct.pack` per event into a bytearray, decoded with numpy at flush.

Keeping Python tuples costs more than making them (each row's ints are heap objects the
garbage collector walks, and a flush has to transpose them): ~2 us per row on a loaded
2-core machine. A row is 18 int64 fields (strings as codes into a per-PE string table, nulls
as INT64_MIN, in LAYOUT order); hot rows are one pack of their per-event values plus a
pre-packed per-chare tail, nothing afterwards; the flush (on a background thread) turns the
buffer into Arrow columns without touching single values from Python.
"""

from __future__ import annotations

import os
import struct
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paradise.format import SCHEMA, make_metadata
from tracers.writer import TraceWriter

NULL = -(2**63)
"""Null marker for every packed field (no real time, id, index or code takes this value)."""

PACKED = ("kind", "pe", "t0", "t1", "active", "cat", "coll", "obj", "index", "name", "msg",
          "peer_pe", "peer_coll", "peer_obj", "bytes", "step", "args", "exec_t0")
"""Packed fields in `pack`'s argument order; the other schema columns are null (tid: 0)."""
LAYOUT = ("t0", "msg", "name", "pe", "peer_pe", "t1", "active", "peer_coll", "peer_obj", "bytes", "args",
          "kind", "cat", "coll", "obj", "index", "step", "exec_t0")
"""Storage order of a row. The hot rows (exec, send) are a packed head of per-event values followed
by a tail of what is fixed per chare and kind (kind, identity codes, step), packed once per object
(`tails`) and appended as bytes: per event ~7-11 int conversions instead of 17, and big-int NULL
conversions only where an event really has a null."""
ROW = struct.Struct("<" + "q" * len(LAYOUT))
EXEC_HEAD = struct.Struct("<7q").pack  # t0, msg, name, pe, peer_pe, t1, active
SEND_HEAD = struct.Struct("<11q").pack  # t0 .. args (t1, active: NULL)
ARRAY_SEND_HEAD = struct.Struct("<4q" + "7xB" * 3 + "4q").pack
"""SEND_HEAD of an array send: peer_pe, t1 and active are always null there, so they are packed as
their bytes (7 zero pad bytes + 0x80, little-endian INT64_MIN) from the small int NULL_HI; a
big-int NULL costs ~10 ns more per field to convert."""
NULL_HI = 0x80
EXEC_TAIL = struct.Struct("<11q").pack  # peer_coll, peer_obj, bytes, args (NULL), kind, cat, coll, obj, index, step, exec_t0
SEND_TAIL = struct.Struct("<7q").pack  # kind, cat, coll, obj, index, step, exec_t0 (NULL)



def pack(kind: int, pe: int, t0: int, t1: int, active: int, cat: int, coll: int, obj: int, index: int, name: int,
         msg: int, peer_pe: int, peer_coll: int, peer_obj: int, nbytes: int, step: int, args: int,
         exec_t0: int = NULL) -> bytes:
    """One row from fields in PACKED order (rare rows; the hot paths use the head/tail structs)."""
    return ROW.pack(t0, msg, name, pe, peer_pe, t1, active, peer_coll, peer_obj, nbytes, args, kind, cat, coll, obj,
                    index, step, exec_t0)


def tails(k_exec: int, k_send: int, cat: int, coll: int, obj: int, index: int, step: int) -> tuple[bytes, bytes]:
    """(exec tail, send tail) of a chare at a step: rebuilt only when its identity or step changes."""
    return (EXEC_TAIL(NULL, NULL, NULL, NULL, k_exec, cat, coll, obj, index, step, NULL),
            SEND_TAIL(k_send, cat, coll, obj, index, step, NULL))


assert ARRAY_SEND_HEAD(1, 2, 3, 4, NULL_HI, NULL_HI, NULL_HI, 5, 6, 7, 8) == SEND_HEAD(
    1, 2, 3, 4, NULL, NULL, NULL, 5, 6, 7, 8)

FLUSH_BYTES = ROW.size * 50_000
"""Flush after ~50 000 rows (~7.2 MB): bounds memory and what a crash loses."""


class Strings:
    """String table of one PE: text <-> small int code (code of None is NULL)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.codes: dict[str, int] = {}

    def code(self, text: str | None) -> int:
        if text is None:
            return NULL
        c = self.codes.get(text)
        if c is None:
            c = self.codes[text] = len(self.texts)
            self.texts.append(text)
        return c


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


def _column(values: np.ndarray, typ: pa.DataType, strings: pa.Array) -> pa.Array:
    mask = values == NULL
    if pa.types.is_dictionary(typ) or pa.types.is_string(typ):
        idx = _ints(np.where(mask, 0, values), mask, pa.int32(), np.int32)
        col = pa.DictionaryArray.from_arrays(idx, strings)
        return col if pa.types.is_dictionary(typ) else col.dictionary_decode()
    if typ == pa.int32():
        return _ints(values, mask, typ, np.int32)
    return _ints(values, mask, pa.int64(), np.int64).cast(typ)


def warm_up() -> None:
    """First Parquet write in a process costs ~0.1-1 s of lazy initialisation: pay it at start-up,
    before the program's own time starts."""
    strings = Strings()
    strings.code("exec")
    data = pack(0, 0, 0, 1, 1, NULL, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL)
    table = PackedWriter._packed_table_of(data, strings)
    sink = pa.BufferOutputStream()
    pq.write_table(table.unify_dictionaries(), sink, compression="zstd")


PART_NOTE = """Part files are written uncompressed and without column statistics: ~240 instead of
~380 ns per row on the traced program's own thread (measured on 50 000 rows). They are temporary:
close() compacts them into one zstd file; only a killed run keeps them (~144 bytes per row)."""


class PackedWriter(TraceWriter):
    """TraceWriter that also takes packed rows in `buf` (rare rows still go through append)."""

    def __init__(self, directory, pe: int, strings: Strings, **metadata) -> None:
        super().__init__(directory, pe, **metadata)
        self.buf = bytearray()
        self.strings = strings
        self._pool: ThreadPoolExecutor | None = None
        self._futures: list[Future] = []
        self._submitted = 0

    def pending(self) -> int:
        return len(self.buf) + len(self._rows)

    def _packed_table(self, data: bytes) -> pa.Table:
        return self._packed_table_of(data, self.strings)

    @staticmethod
    def _packed_table_of(data: bytes, table: Strings) -> pa.Table:
        arr = np.frombuffer(data, dtype="<i8").reshape(-1, len(LAYOUT))
        strings = _strings(table.texts)
        n = arr.shape[0]
        cols = []
        for field in SCHEMA:
            if field.name in LAYOUT:
                cols.append(_column(arr[:, LAYOUT.index(field.name)], field.type, strings))
            elif field.name == "tid":
                cols.append(_ints(np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool), pa.int64(), np.int64))
            else:
                cols.append(pa.nulls(n, field.type))
        return pa.Table.from_arrays(cols, schema=SCHEMA)

    def flush(self) -> None:
        """Hands the rows buffered so far to the writer thread, which writes them as one part file.

        The program's thread only copies the buffer (memcpy); building the Arrow table and the
        Parquet write (which releases the GIL) run on one background thread, in order, so a
        flush overlaps the program instead of stopping it (~0.5 us per row when inline)."""
        self._last_flush = time.monotonic_ns()
        if not self.buf and not self._rows:
            return
        self._check()
        data = bytes(self.buf) if self.buf else b""
        del self.buf[:]  # same object: the hot path keeps a reference to it
        rows, self._rows = self._rows, []
        texts = self.strings.texts[:]  # append-only table: a copy is a consistent snapshot
        part = self.directory / f"{self.stem}.part-{self._submitted:06d}.parquet"
        self._submitted += 1
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="paradise-flush")
        self._futures.append(self._pool.submit(self._write_part, data, rows, texts, dict(self.metadata), part))

    def _write_part(self, data: bytes, rows: list, texts: list[str], metadata: dict, part: Path) -> None:
        tables = []
        if data:
            strings = Strings()
            strings.texts = texts
            tables.append(self._packed_table_of(data, strings))
        if rows:
            tables.append(self._table(rows).cast(SCHEMA))
        table = pa.concat_tables(tables).unify_dictionaries()
        table = table.replace_schema_metadata(make_metadata(**metadata))
        tmp = part.with_suffix(".tmp")
        pq.write_table(table, tmp, compression="none", write_statistics=False)  # see PART_NOTE
        os.replace(tmp, part)
        self._parts.append(part)
        self.rows_written += table.num_rows

    def _check(self) -> None:
        """Re-raises a failed background write here, on the program's thread."""
        while self._futures and self._futures[0].done():
            self._futures.pop(0).result()

    def drain(self) -> None:
        """Waits for every submitted part file (before compaction, metadata changes, exit)."""
        while self._futures:
            self._futures.pop(0).result()

    def close(self, complete: bool = True) -> Path:
        """Flushes, waits for the writer thread, then compacts (TraceWriter.close)."""
        if not self._closed:
            self.flush()
            try:
                self.drain()
            finally:
                if self._pool is not None:
                    self._pool.shutdown(wait=True)
                    self._pool = None
        return super().close(complete)
