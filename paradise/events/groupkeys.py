"""Group ids for rows keyed by several integer columns, without a hash table where possible.

The key columns are packed into one int64 (each column as offset codes, or digit by digit when
its values span widely), re-densified through a lookup table whenever the packed range would
grow past TABLE_SPAN. Used by the event-level reductions (paradise.events.msgedges, objloads).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from paradise.events.eventload import NULL

DIGIT_BITS = 21
"""Key columns whose values span more than 2**DIGIT_BITS are grouped digit by digit (packed
object indices are 21-bit fields): each digit spans little, so no hash table is needed."""
TABLE_SPAN = 1 << 23
"""Packed keys spanning at most this many values are re-densified through a lookup table
(8 MB of flags, 32 MB of ranks at most); wider ones through a sorted hash factorization."""


def _parts(a: np.ndarray) -> list[tuple[np.ndarray, int]]:
    """Codes of column `a` as (codes, k) parts, least significant first, whose joint order is
    the value order with NULL last: one offset part for a small range, else one per 21-bit
    digit (the top one signed), each offset by its own minimum."""
    a = np.asarray(a, np.int64)
    null = a == NULL
    has_null = bool(null.any())
    v = a[~null] if has_null else a
    if len(v) == 0:
        return [(np.zeros(len(a), np.int64), 1)]
    lo, hi = int(v.min()), int(v.max())
    if hi - lo <= 1 << DIGIT_BITS:
        return [((np.where(null, hi - lo + 1, a - lo) if has_null else a - lo), hi - lo + 2)]
    mask = (1 << DIGIT_BITS) - 1
    parts = []
    for shift in range(0, 64, DIGIT_BITS):
        top = shift + DIGIT_BITS >= 63
        d = (a >> shift) if top else ((a >> shift) & mask)  # the top digit keeps the sign
        dv = d[~null] if has_null else d
        dlo, dhi = int(dv.min()), int(dv.max())
        if top:  # NULL rows: past the top digit's largest value, zero in the others
            parts.append(((np.where(null, dhi - dlo + 1, d - dlo) if has_null else d - dlo), dhi - dlo + 2))
            break
        parts.append(((np.where(null, 0, d - dlo) if has_null else d - dlo), dhi - dlo + 1))
    return parts


def _redense(key: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """Ranks 0..d-1 of the keys in value order, and d: a lookup table when the span is small,
    else a sorted hash factorization."""
    if span <= TABLE_SPAN:
        present = np.zeros(span, bool)
        present[key] = True
        values = np.flatnonzero(present)
        rank = np.empty(span, np.int32)
        rank[values] = np.arange(len(values), dtype=np.int32)
        return rank[key].astype(np.int64), len(values)
    import pandas as pd

    g, uniq = pd.factorize(key, sort=True)
    return g.astype(np.int64), len(uniq)


def pack_keys(cols: Iterable[np.ndarray]) -> tuple[np.ndarray, int]:
    """One int64 per row, equal exactly where all key columns are equal and ordered as the rows'
    (last column, ..., first column); and the key's range. `cols` may be a generator: one column
    at a time is held. The key so far is re-densified whenever the next part would take its
    range past TABLE_SPAN, so grouping usually needs no hash."""
    key: np.ndarray | None = None
    mult = 1
    for c in cols:
        parts = _parts(c)
        del c
        for codes, k in parts:
            if key is None:
                key, mult = codes, k
                continue
            if mult * k > TABLE_SPAN:
                key, mult = _redense(key, mult)
            np.multiply(codes, mult, out=codes)  # parts are fresh arrays: no temporaries
            key += codes
            mult *= k
    return (np.zeros(0, np.int64), 1) if key is None else (key, mult)


def group_ids(cols: Iterable[np.ndarray]) -> tuple[np.ndarray, int]:
    """Per row, the id of its group of equal keys (0..n-1), ids in the order of the key values
    (last column first, NULL last), and n."""
    key, span = pack_keys(cols)
    if len(key) == 0:
        return key, 0
    return _redense(key, span)
