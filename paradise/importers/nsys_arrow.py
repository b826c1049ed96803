"""Arrow column helpers of the Nsight Systems importer: dictionary columns from distinct values,
JSON `args` text built column-wise, CUPTI stream ids as int32.

Compute functions are called with arrays only, through pyarrow's C entry point: a Python str
argument becomes a pa.scalar, which imports pandas (~0.5 s of a small import).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import numpy as np
import pyarrow as pa
from pyarrow._compute import CastOptions, call_function

from paradise.importers.kineto_arrow import from_numpy, strings, to_numpy, validity


def dictionary(values: list, inv: np.ndarray) -> pa.DictionaryArray:
    """A dictionary column: row i holds values[inv[i]] (None: null)."""
    ok = np.array([v is not None for v in values], dtype=np.bool_)
    return pa.DictionaryArray.from_arrays(from_numpy(inv.astype(np.int32), ok[inv] if ok.size else None),
                                          strings([v or "" for v in values]))


def unique_inverse(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct values in first-seen order, each row's position among them): np.unique's pair from
    Arrow's hash table, in one pass instead of a sort."""
    enc = call_function("dictionary_encode", [from_numpy(values.astype(np.int64))])
    return to_numpy(enc.dictionary, np.int64), to_numpy(enc.indices, np.int32)


def choose(labels: list[str], codes: np.ndarray) -> pa.DictionaryArray:
    """A dictionary column whose row i holds labels[codes[i]] (codes: ints or bools)."""
    distinct = list(dict.fromkeys(labels))
    remap = np.array([distinct.index(label) for label in labels], dtype=np.int32)
    return pa.DictionaryArray.from_arrays(from_numpy(remap[codes.astype(np.intp)]), strings(distinct))


def per_value(arr: pa.DictionaryArray, fn: Callable, dtype=object, null=None) -> np.ndarray:
    """fn of each distinct value, spread to the rows."""
    table = np.array([fn(v) for v in arr.dictionary.to_pylist()] + [null], dtype=dtype)
    idx = np.where(validity(arr.indices), to_numpy(arr.indices, np.int32), len(table) - 1)
    return table[idx]


def lit(text: str) -> pa.Scalar:
    """One text as an Arrow scalar (taken from an array: pa.scalar would import pandas)."""
    return strings([text])[0]


def concat(*parts: pa.Array | str) -> pa.Array:
    """Row-wise concatenation of string columns and texts (a null part makes the row null)."""
    return call_function("binary_join_element_wise", [*(lit(p) if isinstance(p, str) else p for p in parts),
                                                      lit("")])


def json_args(parts: list[tuple[str, pa.Array]], tail: list[tuple[str, list]] | None = None) -> pa.Array:
    """`{"k": v, ...}` per row from columns already holding JSON literals (null -> null), then the
    `tail` keys, whose values repeat (see few_valued_json): their text is made once per distinct row."""
    if not parts:
        return few_valued_json(tail or [], opening="{")
    pieces: list = []
    for i, (key, arr) in enumerate(parts):
        pieces.append(("{" if i == 0 else ",") + json.dumps(key) + ":")
        pieces.append(call_function("coalesce", [arr, lit("null")]) if arr.null_count else arr)
    pieces.append(few_valued_json(tail, opening=",") if tail else "}")
    if len(pieces) == 3 and isinstance(pieces[2], pa.Array):  # text, column, column: the column between
        # as the separator of the other two: 30 % less time than a join of three parts
        return call_function("binary_join_element_wise", [lit(pieces[0]), pieces[2], pieces[1]])
    return concat(*pieces)


def few_valued_json(parts: list[tuple[str, list]], opening: str) -> pa.Array:
    """`{opening}"k": v, ...}` per row for keys whose values repeat (devices, grids, return codes):
    each part's value is one column (int64 numpy, or a dictionary column of texts) or several ints
    written as a JSON list. The rows are coded by their distinct combination (exact, no hash: each
    column's offset from its minimum, in mixed radix), and each combination's text is made once: a
    concat per row of each value is most of an import's JSON cost."""
    cols = [_codes(c) for _, group in parts for c in group]
    n = len(cols[0][0])
    code, card = np.zeros(n, dtype=np.int64), 1
    for values, _ in cols:
        lo, hi = (int(values.min()), int(values.max())) if n else (0, 0)
        span = hi - lo + 1
        if card * span >= CODE_LIMIT:  # the radix would overflow: number the combinations so far
            _, code = unique_inverse(code)
            code, card = code.astype(np.int64), int(code.max(initial=0)) + 1
        if card * span >= CODE_LIMIT:  # a column of far-apart values: number its distinct values
            uniq, inv = unique_inverse(values)
            code, card = code * uniq.size + inv, card * uniq.size
        else:
            code, card = code * span + (values - lo), card * span
    _, inv = unique_inverse(code)
    first = np.empty(int(inv.max(initial=-1)) + 1, dtype=np.int64)
    first[inv[::-1]] = np.arange(n - 1, -1, -1)
    texts = []
    for row in first:
        values = iter(literal(int(v[row])) for v, literal in cols)
        items = []
        for key, group in parts:
            vals = [next(values) for _ in group]
            items.append(json.dumps(key) + ":" + (vals[0] if len(group) == 1 else "[" + ",".join(vals) + "]"))
        texts.append(opening + ",".join(items) + "}")
    return call_function("take", [strings(texts), from_numpy(inv)])


CODE_LIMIT = 1 << 62
"""Bound of few_valued_json's mixed-radix codes (int64, with room for one more multiply-add)."""


def _codes(col: np.ndarray | pa.DictionaryArray) -> tuple[np.ndarray, Callable[[int], str]]:
    """(each row's int64 value, the JSON literal of a value) of an int column, or of a dictionary
    column of texts by its indices (null: one past the last)."""
    if isinstance(col, pa.DictionaryArray):
        texts = [json.dumps(v) for v in col.dictionary.to_pylist()] + ["null"]
        idx = np.where(validity(col.indices), to_numpy(col.indices, np.int32), len(texts) - 1)
        return idx.astype(np.int64), texts.__getitem__
    return col.astype(np.int64, copy=False), str


def cast(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    return call_function("cast", [arr], CastOptions.safe(typ))


def decode(arr: pa.DictionaryArray) -> pa.Array:
    """A dictionary column as plain strings."""
    return call_function("take", [arr.dictionary, arr.indices])


def encode(arr: pa.Array) -> pa.DictionaryArray:
    """A string column dictionary-encoded."""
    return call_function("dictionary_encode", [arr])


def json_int(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    return cast(from_numpy(values.astype(np.int64), valid), pa.string())


def json_str(arr: pa.DictionaryArray) -> pa.Array:
    """A dictionary column as JSON string literals."""
    texts = strings([json.dumps(v) for v in arr.dictionary.to_pylist()])
    return call_function("take", [texts, arr.indices])


def int32_stream(values: np.ndarray) -> np.ndarray:
    """CUPTI stream ids are uint32: 4294967295 (all streams) becomes -1, as in the Kineto importer."""
    return np.where(values >= 2**31, values - 2**32, values).astype(np.int32)
