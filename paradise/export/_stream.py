"""Writing a stream of Arrow string batches to a file without a Python loop over rows: a string
array's characters sit in one buffer, so each batch is written as one slice of that buffer."""

from __future__ import annotations

import gzip
from typing import IO

import numpy as np
import pyarrow as pa

GZIP_LEVEL = 3
"""zlib level of .gz outputs: most of level 6's size at about twice its speed."""


def output_stream(raw: IO[bytes], name: str) -> IO[bytes]:
    """What to write the output called `name` into, over its open file `raw`: a gzip stream when
    the name ends in .gz (closing it leaves `raw` open), else `raw` itself."""
    if name.endswith(".gz"):
        return gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=GZIP_LEVEL, mtime=0)  # type: ignore[return-value]
    return raw


def string_bytes(arr: pa.Array, start: int = 0, stop: int | None = None) -> memoryview:
    """The concatenated characters of rows [start, stop) of a string array (nulls contribute
    nothing), as a view of the array's own data buffer."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_string_view(arr.type) if hasattr(pa.types, "is_string_view") else False:
        arr = arr.cast(pa.large_string())
    stop = len(arr) if stop is None else stop
    if stop <= start:
        return memoryview(b"")
    if arr.null_count:
        arr = arr.fill_null("")
    width = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = np.frombuffer(arr.buffers()[1], dtype=width)[arr.offset:arr.offset + len(arr) + 1]
    data = arr.buffers()[2]
    if data is None:
        return memoryview(b"")
    return memoryview(data)[int(offsets[start]):int(offsets[stop])]
