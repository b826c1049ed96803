"""numpy <-> Arrow without pyarrow's Python-object entry points.

Why: `pa.array(...)`, `Array.to_numpy()` and scalar-taking compute calls make pyarrow import
pandas (about 50 MB and a second of start-up) to check for pandas types. The importer only
moves flat numpy buffers, so it builds and reads Arrow buffers directly.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paradise.format.arrays import bitmap, from_numpy, strings, to_numpy, validity

__all__ = ["from_numpy", "strings", "sparse_dict_strings", "to_numpy", "validity"]

def sparse_dict_strings(n: int, items: list[tuple[int, str]]) -> pa.DictionaryArray:
    """A dictionary column of n rows, null except at the (row, text) items given."""
    codes: dict[str, int] = {}
    idx = np.zeros(n, dtype=np.int32)
    valid = np.zeros(n, dtype=np.bool_)
    for i, text in items:
        idx[i] = codes.setdefault(text, len(codes))
        valid[i] = True
    return pa.DictionaryArray.from_arrays(from_numpy(idx, valid), strings(list(codes)))


def _dictionary_encode(arr: pa.Array) -> pa.DictionaryArray:
    """arr.dictionary_encode() without importing pyarrow.compute.

    Why: that module wraps every compute function in Python at import (~25 ms, a tenth of
    importing a small trace); the C entry point it calls is the same.
    """
    try:
        from pyarrow._compute import call_function
    except ImportError:  # pragma: no cover - a pyarrow that moved its private module
        return arr.dictionary_encode()
    return call_function("dictionary_encode", [arr])


def raw_dict_strings(raws: list, to_text) -> pa.DictionaryArray:
    """Dictionary-encodes raw JSON values in C, then decodes each distinct one with to_text.

    Why: the same kernel and op names repeat thousands of times; building a Python str per
    event and hashing it costs more than hashing the raw bytes once in Arrow.
    """
    n = len(raws)
    lens = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lens, out=offsets[1:])
    present = lens > 0
    nulls = int(n - np.count_nonzero(present))
    raw = pa.Array.from_buffers(
        pa.binary(),
        n,
        [bitmap(present) if nulls else None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raws))],
        null_count=nulls,
    )
    enc = _dictionary_encode(raw)
    texts = [to_text(b) for b in enc.dictionary.to_pylist()]
    idx = to_numpy(enc.indices, np.int32)
    valid = validity(enc.indices)
    none_codes = [i for i, t in enumerate(texts) if t is None]
    if none_codes:
        valid &= ~np.isin(idx, none_codes)
    return pa.DictionaryArray.from_arrays(
        from_numpy(idx, valid), strings(["" if t is None else t for t in texts])
    )
