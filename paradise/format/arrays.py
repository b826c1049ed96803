"""numpy <-> Arrow by the arrays' buffers, without pyarrow's Python-object entry points.

`pa.array(...)`, `Array.to_numpy()` (and `np.asarray` on an Array) make pyarrow import pandas (about 50 MB and a
second of start-up) to check for pandas types; importers and the engines' numpy sweeps read the
primitive buffers instead.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def validity(arr: pa.Array) -> np.ndarray:
    """True where arr holds a value."""
    n = len(arr)
    if arr.null_count == 0:
        return np.ones(n, dtype=np.bool_)
    bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
    return np.unpackbits(bits, bitorder="little", count=arr.offset + n)[arr.offset :].astype(np.bool_)


def one_array(col: pa.ChunkedArray) -> pa.Array:
    """A column as one array: its only chunk as it is (ChunkedArray.combine_chunks copies the buffers
    even then), else the chunks concatenated."""
    return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()


def to_numpy(arr: pa.Array, dtype: type) -> np.ndarray:
    """Values of a primitive array (nulls read as whatever the buffer holds: mask them)."""
    n = len(arr)
    buf = arr.buffers()[1]
    width = 1 / 8 if dtype is np.bool_ else np.dtype(dtype).itemsize
    if buf is None or buf.size < (arr.offset + n) * width:  # an all-null array may omit its values
        return np.zeros(n, dtype=dtype)
    if dtype is np.bool_:
        bits = np.frombuffer(buf, dtype=np.uint8)
        return np.unpackbits(bits, bitorder="little", count=arr.offset + n)[arr.offset :].astype(np.bool_)
    return np.frombuffer(buf, dtype=dtype, count=arr.offset + n)[arr.offset :]


_TYPES = {
    np.dtype(np.int64): pa.int64(),
    np.dtype(np.int32): pa.int32(),
    np.dtype(np.int8): pa.int8(),
    np.dtype(np.bool_): pa.bool_(),
}


def bitmap(mask: np.ndarray) -> pa.Buffer:
    """An Arrow validity (or boolean) bitmap of mask, LSB first."""
    return pa.py_buffer(np.packbits(mask, bitorder="little"))


def from_numpy(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """An Arrow array of int64/int32/bool values; `valid` False marks nulls."""
    values = np.ascontiguousarray(values)
    typ = _TYPES[values.dtype]
    data = bitmap(values) if values.dtype == np.bool_ else pa.py_buffer(values)
    if valid is None or bool(valid.all()):
        return pa.Array.from_buffers(typ, len(values), [None, data], null_count=0)
    nulls = int(len(valid) - np.count_nonzero(valid))
    return pa.Array.from_buffers(typ, len(values), [bitmap(valid), data], null_count=nulls)


def strings(values: list) -> pa.Array:
    """A string array from str/None values (None -> null)."""
    n = len(values)
    encoded = [b"" if v is None else v.encode() for v in values]
    lens = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    valid = np.fromiter((v is not None for v in values), dtype=np.bool_, count=n)
    nulls = int(n - np.count_nonzero(valid))
    buffers = [bitmap(valid) if nulls else None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), n, buffers, null_count=nulls)


NULLS_HELD = 1 << 18
"""Rows of the all-null column held per type by `nulls` (about 2 MiB for an int64)."""
_NULLS: dict[pa.DataType, pa.Array] = {}


def nulls(n: int, typ: pa.DataType) -> pa.Array:
    """n nulls of type typ: a slice of one all-null array held per type (up to NULLS_HELD rows), so
    a writer that fills the format's unused columns batch after batch does not allocate and zero
    new buffers for each (pa.nulls does)."""
    if n > NULLS_HELD:
        return pa.nulls(n, typ)
    held = _NULLS.get(typ)
    if held is None or len(held) < n:  # grown as needed: a small import holds little
        held = _NULLS[typ] = pa.nulls(min(max(n, 2 * len(held) if held is not None else 0), NULLS_HELD), typ)
    return held.slice(0, n)
