"""The format's row order: each PE's rows in time order (t0 never decreases), equal starts kept in
the order they were written (docs/trace-format.md, "Row order").

Writers whose rows arrive in another order (a tracer appends an execution when it ends, after the
sends it made; Kineto lists events thread by thread and stream by stream) put one PE's rows in
this order once, here, in bounded memory: the rows go to an Arrow IPC stream file that is
memory-mapped back, so only its t0 column and the sort order (16 bytes a row) are held, each
output batch touches only the pages and batches of its own rows, and the pages it read are let go
before the next. The stream format lets each batch keep its own
dictionaries, so dictionary columns are never decoded and encoded again. Needs only pyarrow and numpy,
like the rest of the format; compute functions are called through pyarrow's C entry point, as
importing pyarrow.compute costs a tenth of importing a small trace.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
from pyarrow._compute import call_function

from paradise.format.arrays import from_numpy, nulls, to_numpy

OUT_ROWS = 1 << 17
"""Rows per table handed back: bounds the copy each output step makes."""


def in_time_order(t0: pa.Array | pa.ChunkedArray) -> bool:
    """Whether t0 never decreases."""
    if len(t0) < 2:
        return True
    return bool(call_function("all", [call_function("greater_equal", [t0[1:], t0[:-1]])]).as_py())


def time_ordered(tables: Iterable[pa.Table], schema: pa.Schema, scratch: str | os.PathLike,
                 batch_rows: int = OUT_ROWS) -> Iterator[pa.Table]:
    """The rows of `tables` (each castable to `schema`) as tables of `schema` in time order, a
    stable sort by t0: one PE's rows, or several PEs' (in one time order, each PE's is too). `scratch` is a file path for the spilled rows, removed at the end;
    rows already in order come back as they were, without the sort."""
    scratch = Path(scratch)
    try:
        starts: list[pa.ChunkedArray] = []
        filled: set[str] = set()  # columns holding a value somewhere: only these are sorted
        with pa.OSFile(str(scratch), "wb") as sink, pa.ipc.new_stream(sink, schema) as writer:
            for t in tables:
                if not t.schema.equals(schema):
                    t = t.cast(schema)
                writer.write_table(t)
                starts.append(t.column("t0"))
                filled.update(c for c, col in zip(t.column_names, t.columns) if col.null_count < len(col))
        t0 = pa.chunked_array([c for s in starts for c in s.chunks], pa.int64())
        order = None if in_time_order(t0) else call_function("sort_indices", [t0])  # a stable sort
        mapped = _map(scratch)
        batches = list(pa.ipc.open_stream(pa.BufferReader(pa.py_buffer(mapped))))
        if order is None:
            rows = pa.Table.from_batches(batches, schema)
            for i in range(0, rows.num_rows, batch_rows):
                yield rows.slice(i, batch_rows)
                _release(mapped)
            return
        idx = np.frombuffer(order.buffers()[1], dtype=np.int64, count=len(order))
        offsets = np.cumsum([0] + [b.num_rows for b in batches])
        live = [c for c in schema.names if c in filled or c == "t0"]
        sorted_schema = pa.schema([schema.field(c) for c in live])
        for i in range(0, idx.size, batch_rows):
            part = _gather([b.select(live) for b in batches], offsets, idx[i:i + batch_rows], sorted_schema)
            _release(mapped)
            yield pa.Table.from_arrays([part.column(f.name) if f.name in filled or f.name == "t0"
                                        else pa.nulls(part.num_rows, f.type) for f in schema], schema=schema)
    finally:
        scratch.unlink(missing_ok=True)


def _map(path: Path) -> mmap.mmap:
    """The spilled rows, memory-mapped read-only (closed when the last Arrow buffer over it goes)."""
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _release(mapped: mmap.mmap) -> None:
    """Drops the mapped pages a slice read from this process's memory (they stay in the file and the
    page cache, and are read again if a later slice needs them): the sort's resident memory is the
    slice's rows, not the whole spill."""
    if hasattr(mmap, "MADV_DONTNEED"):
        mapped.madvise(mmap.MADV_DONTNEED)


def _gather(batches: list[pa.RecordBatch], offsets: np.ndarray, idx: np.ndarray, schema: pa.Schema) -> pa.Table:
    """The rows at global positions idx, taken from only the batches they lie in.

    Why: a take over the whole chunked table concatenates every batch on each call, so sorting
    n rows in slices costs n^2; here each slice costs its own rows (one take per batch it touches,
    then one that interleaves them)."""
    which = np.searchsorted(offsets, idx, side="right") - 1
    grouped = np.argsort(which, kind="stable")  # slice positions, batch by batch
    bounds = np.searchsorted(which[grouped], np.arange(len(batches) + 1))
    pieces = []
    for b in np.flatnonzero(np.diff(bounds)):
        local = idx[grouped[bounds[b]:bounds[b + 1]]] - offsets[b]
        pieces.append(call_function("take", [batches[b], _int64(local)]))
    back = np.empty_like(grouped)
    back[grouped] = np.arange(grouped.size)  # slice position -> row of the concatenated pieces
    return call_function("take", [pa.Table.from_batches(pieces, schema), _int64(back)])


def _int64(values: np.ndarray) -> pa.Array:
    """Take indices as an int64 Arrow array (format.arrays.from_numpy)."""
    return from_numpy(np.asarray(values, dtype=np.int64))


class NotInTimeOrder(Exception):
    """A stream given to merge_time_ordered is not in time order (the caller sorts it instead)."""


def merge_time_ordered(streams: list[Iterable[pa.Table]], schema: pa.Schema,
                       batch_rows: int = OUT_ROWS) -> Iterator[pa.Table]:
    """The rows of several streams, each already in time order, as one time-ordered stream of
    `schema` tables of about batch_rows rows (one chunk each, as time_ordered's: a Parquet writer
    handed many chunks with their own dictionaries writes them slowly): the order time_ordered
    gives their concatenation (equal t0: stream order, then row order), without the spill. Held:
    a batch or so per stream and one output table. Raises NotInTimeOrder when a stream's t0
    decreases (rows may have been handed back: the caller starts again with time_ordered)."""
    its = [iter(s) for s in streams]
    pending: list[list[tuple[pa.Table, np.ndarray]]] = [[] for _ in its]
    last: list[int | None] = [None] * len(its)
    done = [False] * len(its)

    def pull(i: int) -> None:
        for t in its[i]:
            if t.num_rows == 0:
                continue
            t0 = _t0(t)
            if (last[i] is not None and t0[0] < last[i]) or bool(np.any(t0[1:] < t0[:-1])):
                raise NotInTimeOrder
            pending[i].append((t, t0))
            last[i] = int(t0[-1])
            return
        done[i] = True

    try:
        for i in range(len(its)):
            pull(i)
        ready: list[tuple[pa.Table, np.ndarray]] = []  # final rows (one round's all before the next's)
        while True:
            active = [i for i in range(len(its)) if not done[i]]
            # every row still to come is at or after the smallest last t0 read: rows before it are final
            cut = min((last[i] for i in active), default=None)
            ready += [p for i in range(len(its)) for p in _before(pending[i], cut)]
            if ready and (not active or sum(t0.size for _, t0 in ready) >= batch_rows):
                yield _interleave(ready, schema)
                ready = []
            if not active:
                return
            for i in active:
                if last[i] == cut:
                    pull(i)
    finally:  # a stream left open (NotInTimeOrder, an error, a consumer that stopped) is closed now
        for it in its:
            if hasattr(it, "close"):
                it.close()


def _t0(t: pa.Table) -> np.ndarray:
    col = t.column("t0")
    if col.num_chunks == 1:
        return to_numpy(col.chunks[0], np.int64)
    return np.concatenate([to_numpy(c, np.int64) for c in col.chunks])


def _before(pending: list[tuple[pa.Table, np.ndarray]], cut: int | None) -> list[tuple[pa.Table, np.ndarray]]:
    """The pending rows with t0 < cut (all of them when cut is None), taken off `pending`."""
    out = []
    while pending:
        t, t0 = pending[0]
        k = t0.size if cut is None else int(np.searchsorted(t0, cut, side="left"))
        if k == t0.size:
            out.append(pending.pop(0))
            continue
        if k:
            out.append((t.slice(0, k), t0[:k]))
            pending[0] = (t.slice(k), t0[k:])
        break
    return out


def _interleave(pieces: list[tuple[pa.Table, np.ndarray]], schema: pa.Schema) -> pa.Table:
    """The pieces' rows in t0 order, equal t0 in the pieces' order (a stable sort); a column null
    in every piece is not taken (nulls in any order are the same nulls)."""
    rows = pa.concat_tables([t.cast(schema) if not t.schema.equals(schema) else t for t, _ in pieces])
    order = _int64(np.argsort(np.concatenate([t0 for _, t0 in pieces]), kind="stable"))
    return pa.Table.from_arrays([nulls(rows.num_rows, f.type) if col.null_count == len(col)
                                 else call_function("take", [col, order]) for f, col in zip(schema, rows.columns)],
                                schema=schema)
