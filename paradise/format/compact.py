"""Spools (paradise.format.spool) into the trace's per-PE Parquet files, after the traced run.

The launcher converts every spool of a trace directory right after the run ends (whatever its end),
and paradise.store does it for a directory that still holds spools (a killed launcher). Conversion
is idempotent and crash-safe: under an exclusive lock on the spool (which its writer holds while it
runs, so a live spool is never taken), the rows go to a temporary file renamed onto
`pe-NNNNN.parquet`, and only then is the spool removed. Rows are put in time order here (a tracer
records an execution when it ends, after its sends: paradise.format.order), a stable sort by t0;
memory is bounded by one flush's rows plus the sort's spill.
"""

from __future__ import annotations

import errno
import fcntl
import itertools
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from paradise.format import COLUMN_NAMES, REQUIRED_COLUMNS, WRITE_OPTIONS, make_metadata
from paradise.format.arrays import bitmap, from_numpy, nulls, strings
from paradise.format.order import time_ordered
from paradise.format.schema import SCHEMA, tuple_rows_table
from paradise.format.spool import HEAD, META, RECORD, ROWS, SPOOL_VERSION, STRS, SUFFIX, TAGS, TUPL
from paradise.format.summary import SummarizingWriter, SummaryFactory, summary_for

LOCK_WAIT_S = 10.0
"""How long conversion waits for a spool's writer to let go (a PE still closing after a kill)."""
IN_MEMORY_BYTES = 64 << 20
"""Packed rows sorted in memory at most (~460 000 charm rows, ~3x that at the peak: rows, their
sorted columns, the Arrow table): more go through the bounded-memory sort."""
MAX_JSON_BYTES = 64 << 20
"""Largest JSON record read (strings, tuple rows, metadata): more is a damaged length."""


class SpoolError(ValueError):
    """A spool that cannot be converted; the message names the file and the problem."""


def _string_column(values: np.ndarray, mask: np.ndarray, texts: pa.Array) -> pa.Array:
    """A string column from codes by gathering the texts' bytes."""
    offsets_in = np.frombuffer(texts.buffers()[1], dtype=np.int32, count=len(texts) + 1)
    blob = texts.buffers()[2]
    data = np.frombuffer(blob, dtype=np.uint8) if blob is not None else np.zeros(0, dtype=np.uint8)
    starts, lens = offsets_in[:-1].astype(np.int64), np.diff(offsets_in).astype(np.int64)
    codes = np.where(mask, 0, values)
    row_lens = np.where(mask, 0, lens[codes] if len(lens) else 0)
    offsets = np.zeros(len(values) + 1, dtype=np.int32)
    np.cumsum(row_lens, out=offsets[1:])
    total = int(offsets[-1])
    src = np.repeat(starts[codes] - offsets[:-1], row_lens) + np.arange(total) if total else np.zeros(0, np.int64)
    nulls = int(mask.sum())
    valid = bitmap(~mask) if nulls else None
    return pa.Array.from_buffers(pa.string(), len(values), [valid, pa.py_buffer(offsets), pa.py_buffer(data[src])],
                                 null_count=nulls)


def _column(values: np.ndarray, null: int, typ: pa.DataType, texts: pa.Array) -> pa.Array:
    mask = values == null
    if pa.types.is_string(typ):
        return _string_column(values, mask, texts)
    if pa.types.is_dictionary(typ):
        return pa.DictionaryArray.from_arrays(from_numpy(np.where(mask, 0, values).astype(np.int32), ~mask), texts)
    if typ == pa.int32():
        return from_numpy(values.astype(np.int32), ~mask)
    return from_numpy(values, ~mask)  # every other column of SCHEMA packs as int64


def packed_table(data: bytes | memoryview, columns: list[str], fill: dict[str, int], null: int,
                 texts: list[str], order: np.ndarray | None = None) -> pa.Table:
    """Packed rows (len(columns) int64 each; `order`: taken in that order) as a SCHEMA table: string
    columns are codes into `texts`, `null` is null, a column in `fill` holds that constant, any other is null."""
    arr = np.frombuffer(data, dtype="<i8").reshape(-1, len(columns))
    by_field = arr.T[:, order] if order is not None else np.ascontiguousarray(arr.T)  # one copy: columns contiguous
    table_strings = strings(texts)
    n = arr.shape[0]
    cols = []
    for field in SCHEMA:
        if field.name in columns:
            cols.append(_column(by_field[columns.index(field.name)], null, field.type, table_strings))
        elif field.name in fill:
            cols.append(from_numpy(np.full(n, fill[field.name], dtype=np.int32 if field.type == pa.int32() else np.int64)))
        else:
            cols.append(nulls(n, field.type))
    return pa.Table.from_arrays(cols, schema=SCHEMA)


def _records(path: Path, fh, skip: tuple[bytes, ...] = ()) -> Iterator[tuple[bytes, memoryview | None]]:
    """(tag, payload) of each whole record; a torn trailing record (a killed writer) is dropped.
    Records whose tag is in `skip` are stepped over unread (payload None)."""
    size = os.fstat(fh.fileno()).st_size
    pos = 0
    while pos + RECORD.size <= size:
        fh.seek(pos)
        tag, reserved, length = RECORD.unpack(fh.read(RECORD.size))
        if tag not in TAGS or reserved != 0:
            if not any(fh.read(min(size - pos - RECORD.size, 1 << 20)) + tag):  # zeros a crash left: torn
                return
            raise SpoolError(f"{path}: damaged spool (unknown record at byte {pos})")
        if pos + RECORD.size + length > size:
            return  # torn: the writer was killed mid-write
        if tag != ROWS and length > MAX_JSON_BYTES:
            raise SpoolError(f"{path}: damaged spool ({tag.decode()} record of {length:,} bytes at byte {pos})")
        pos += RECORD.size + length
        yield tag, None if tag in skip else memoryview(fh.read(length))


def _json(path: Path, tag: bytes, payload: memoryview, want: type) -> Any:
    try:
        value = json.loads(bytes(payload))
    except (ValueError, UnicodeDecodeError):
        raise SpoolError(f"{path}: damaged spool ({tag.decode()} record is not JSON)") from None
    if not isinstance(value, want):
        raise SpoolError(f"{path}: damaged spool ({tag.decode()} record is not a JSON {want.__name__})")
    return value


def _head(path: Path, payload: memoryview) -> tuple[list[str], dict[str, int], int, dict[str, Any]]:
    head = _json(path, HEAD, payload, dict)
    if head.get("spool") != SPOOL_VERSION:
        raise SpoolError(f"{path}: spool version {str(head.get('spool'))[:20]} is not supported "
                         f"(this paradise reads {SPOOL_VERSION})")
    columns, fill, null, meta = head.get("columns"), head.get("fill", {}), head.get("null"), head.get("metadata")
    if (not isinstance(columns, list) or not columns or len(set(columns)) != len(columns)
            or any(c not in COLUMN_NAMES for c in columns) or not set(REQUIRED_COLUMNS) <= set(columns)):
        raise SpoolError(f"{path}: damaged spool (column list is not a list of trace columns with "
                         f"{', '.join(REQUIRED_COLUMNS)})")
    if (not isinstance(fill, dict) or any(c not in COLUMN_NAMES or type(v) is not int for c, v in fill.items())
            or type(null) is not int or not isinstance(meta, dict)):
        raise SpoolError(f"{path}: damaged spool (header fields)")
    return columns, fill, null, meta


class _Reader:
    """The rows of one spool in written order, and its string table and metadata as they stand
    after the last record read."""

    def __init__(self, path: Path, fh, skip: tuple[bytes, ...] = ()) -> None:
        """`skip`: record tags stepped over unread (their rows or strings are not wanted)."""
        self.path, self.fh = path, fh
        self.metadata: dict[str, Any] = {}
        self.texts: list[str] = []
        self.rows = 0
        self._records = _records(path, fh, skip)
        first = next(self._records, None)
        if first is None or first[0] != HEAD or first[1] is None:
            raise SpoolError(f"{path}: not a paradise spool (no header record)")
        self.columns, self.fill, self.null, meta = _head(path, first[1])
        self.metadata = dict(meta)

    def tables(self) -> Iterator[pa.Table]:
        """Each rows record as a table (string codes into the strings known so far)."""
        for packed, item in self.items():
            yield self.packed(item) if packed else self.tuples(item)

    def packed(self, data: bytes | memoryview, order: np.ndarray | None = None) -> pa.Table:
        return packed_table(data, self.columns, self.fill, self.null, self.texts, order)

    def items(self) -> Iterator[tuple[bool, Any]]:
        """(True, packed rows) or (False, tuple rows) per rows record, checked; strings and
        metadata records are taken in on the way."""
        columns, null, texts = self.columns, self.null, self.texts
        width = 8 * len(columns)
        for tag, payload in self._records:
            if payload is None:
                continue  # skipped unread
            if tag == STRS:
                new = _json(self.path, tag, payload, list)
                if not all(isinstance(t, str) for t in new):
                    raise SpoolError(f"{self.path}: damaged spool (a string table entry is not a string)")
                texts += new
            elif tag == ROWS:
                if len(payload) % width:
                    raise SpoolError(f"{self.path}: damaged spool (a rows record of {len(payload):,} bytes is "
                                     f"not a whole number of {width}-byte rows)")
                self._check_codes(payload, columns, null, len(texts))
                self.rows += len(payload) // width
                yield True, payload
            elif tag == TUPL:
                rows = _json(self.path, tag, payload, list)
                self.rows += len(rows)
                yield False, rows
            elif tag == META:
                self.metadata.update(_json(self.path, tag, payload, dict))
            else:
                raise SpoolError(f"{self.path}: damaged spool (a second header record)")

    def _check_codes(self, payload: memoryview, columns: list[str], null: int, n_texts: int) -> None:
        """String codes must name a string written before them."""
        arr = np.frombuffer(payload, dtype="<i8").reshape(-1, len(columns))
        for i, c in enumerate(columns):
            if c in _STRING_COLUMNS:
                codes = arr[:, i][arr[:, i] != null]
                if codes.size and (codes.min() < 0 or codes.max() >= n_texts):
                    raise SpoolError(f"{self.path}: damaged spool (column {c} names a string that was never written)")

    def tuples(self, rows: list) -> pa.Table:
        try:
            return tuple_rows_table([tuple(r) for r in rows])
        except (TypeError, ValueError, pa.ArrowException) as exc:
            raise SpoolError(f"{self.path}: damaged spool (a row record does not fit the schema: "
                             f"{str(exc).splitlines()[0][:120]})") from None


_STRING_COLUMNS = frozenset(f.name for f in SCHEMA if pa.types.is_string(f.type) or pa.types.is_dictionary(f.type))


def read(spool: str | os.PathLike) -> Iterator[pa.Table]:
    """The rows of a spool as written so far, without converting it or taking its lock (a live
    writer may still append: what is read is a prefix of what it will hold)."""
    with open(spool, "rb") as fh:
        yield from _Reader(Path(spool), fh).tables()


def final_path(spool: Path) -> Path:
    return spool.with_name(spool.name.removesuffix(SUFFIX) + ".parquet")


def _lock(path: Path, fh, wait_s: float) -> None:
    """Takes the spool's exclusive lock; its writer holds it while it runs (the kernel lets go when it dies)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                raise SpoolError(f"{path}: still being written by a running traced process") from None
            time.sleep(0.05)


def convert(spool: str | os.PathLike, *, wait_s: float = LOCK_WAIT_S, clock: dict[str, Any] | None = None,
            summary: SummaryFactory | None = None) -> tuple[Path, int]:
    """(the Parquet file, its rows) of one spool, which is removed; a spool converted meanwhile by
    another process is left to it. `clock`: fields added to the metadata's `clock` where it holds
    offsets (the trace's clock refinement, paradise.store.compaction). `summary`: makes the file's
    summary (paradise.format.summary) from its rows, for a file whose PE measured no clock offsets
    (the reader corrects such a file's times, so a summary of them as written would not be used)."""
    spool = Path(spool)
    final = final_path(spool)
    with open(spool, "rb") as fh:
        _lock(spool, fh, wait_s)
        if os.fstat(fh.fileno()).st_nlink == 0:  # another reader converted it while we waited
            return final, 0
        reader = _Reader(spool, fh)
        fd, scratch = tempfile.mkstemp(prefix=f".{spool.stem}.order.", suffix=".tmp", dir=spool.parent)
        os.close(fd)
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{final.name}.", suffix=".tmp", dir=spool.parent)
            with os.fdopen(fd, "wb") as out_fh:
                tables = _ordered(reader, scratch)
                # the first table comes once every record was read: the metadata (the last META
                # record, a clean close's) is final by then; a spool without rows gives an empty file
                first = next(tables, SCHEMA.empty_table())
                with SummarizingWriter(out_fh, SCHEMA.with_metadata(_metadata(spool, reader, clock)),
                                       summary_for(summary, reader.metadata), **WRITE_OPTIONS) as out:
                    for table in itertools.chain([first], tables):
                        out.write_table(table)
            os.replace(tmp, final)
            tmp = None
        finally:
            if tmp is not None:
                Path(tmp).unlink(missing_ok=True)
            Path(scratch).unlink(missing_ok=True)
        spool.unlink()
    return final, reader.rows


def _ordered(reader: _Reader, scratch: str) -> Iterator[pa.Table]:
    """The spool's rows as tables in time order (a stable sort by t0 of the rows in written order).

    A spool of packed rows alone up to IN_MEMORY_BYTES (a charm PE's of a short run) is sorted as one
    int64 matrix in memory by numpy, before any Arrow column is built; any other goes through
    paradise.format.order (bounded memory: spilled to `scratch`)."""
    held: list[tuple[bool, Any]] = []
    size = 0
    items = reader.items()
    for item in items:
        held.append(item)
        size += len(item[1]) if item[0] else IN_MEMORY_BYTES + 1  # tuple rows: the general path
        if size > IN_MEMORY_BYTES:
            tables = (reader.packed(x) if packed else reader.tuples(x) for packed, x in itertools.chain(held, items))
            yield from time_ordered(tables, SCHEMA, scratch)
            return
    if not held:
        return
    data = held[0][1] if len(held) == 1 else b"".join(x for _, x in held)
    t0 = np.frombuffer(data, dtype="<i8").reshape(-1, len(reader.columns))[:, reader.columns.index("t0")]
    yield reader.packed(data, np.argsort(t0, kind="stable"))


def _metadata(spool: Path, reader: _Reader, clock: dict[str, Any] | None = None) -> dict[bytes, bytes]:
    meta = dict(reader.metadata)
    meta.setdefault("complete", False)  # no clean close was recorded (a killed run): set by the last META
    if clock and isinstance(meta.get("clock"), dict) and meta["clock"].get("offsets"):
        meta["clock"] = {**meta["clock"], **clock}
    try:
        return make_metadata(**meta)
    except (TypeError, ValueError) as exc:
        raise SpoolError(f"{spool}: damaged spool ({str(exc)[:160]})") from None


def spools(directory: str | os.PathLike) -> list[Path]:
    """The spools of a trace directory."""
    return sorted(p for p in Path(directory).glob(f"pe-*{SUFFIX}") if not p.name.startswith("."))


def convert_all(directory: str | os.PathLike, *, wait_s: float = LOCK_WAIT_S,
                clocks: dict[str, dict[str, Any]] | None = None, summary: SummaryFactory | None = None
                ) -> tuple[int, int]:
    """(spools converted, rows) of a trace directory (`clocks`: spool name -> convert's `clock`;
    `summary`: convert's)."""
    done = rows = 0
    for spool in spools(directory):
        try:
            _, n = convert(spool, wait_s=wait_s, clock=(clocks or {}).get(spool.name), summary=summary)
        except FileNotFoundError:  # converted and removed by another process meanwhile
            continue
        done += 1
        rows += n
    return done, rows
