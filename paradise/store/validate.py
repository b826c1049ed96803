"""Checks a trace file's metadata, column types and value ranges against the format before any
engine reads it: a trace is data from anywhere, and sizes it claims (PEs) bound allocations.

Value ranges come from the Parquet footer's row-group statistics (no scan); a file written
without statistics gets one cheap DuckDB query instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from paradise.errors import NotAParadiseTrace
from paradise.format import COLUMNS, MAX_PES, META_KEY

MAX_METADATA_BYTES = 8 << 20
"""Largest metadata JSON read: name tables of the biggest real traces are ~100 kB."""
MAX_ABS_TIME_NS = 1 << 62
"""Times are ns from the run's start: 2^62 ns is 146 years, so anything beyond is damage."""
MAX_FILE_BYTES_SUM = 1 << 58
"""Largest bound (rows x largest `bytes`) on the message bytes of one file (256 PiB): sums of
`bytes` over a trace are int64 in every query, so a damaged file past this could overflow them,
while 10^8 rows of 1 GB collectives (10^17) still read; 32 files at the bound are still below 2^63."""

_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "format_version": (str,), "source": (str,), "program": (str,), "pes": (int,), "world_size": (int,),
    "pe": (int,), "hosts": (list, dict), "clock": (dict,), "origin_ns": (int, float), "complete": (bool,),
    "names": (dict, list), "extra": (dict,),
}  # fmt: skip
_STRINGISH = (pa.types.is_string, pa.types.is_large_string)


def parse_metadata(f: Path, schema_metadata: dict[bytes, bytes] | None) -> dict[str, Any] | None:
    """The JSON metadata of a file, checked to be a bounded JSON object; None without the key."""
    if not schema_metadata or META_KEY not in schema_metadata:
        return None
    raw = schema_metadata[META_KEY]
    if len(raw) > MAX_METADATA_BYTES:
        raise NotAParadiseTrace(f"{f}: trace metadata of {len(raw):,} bytes (more than {MAX_METADATA_BYTES:,})")
    try:
        meta = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise NotAParadiseTrace(f"{f}: trace metadata is not valid JSON") from None
    if not isinstance(meta, dict):
        raise NotAParadiseTrace(f"{f}: trace metadata is a JSON {type(meta).__name__}, not an object")
    return meta


def check_metadata(f: Path, meta: dict[str, Any]) -> None:
    """Field types and ranges; unknown fields are kept (a newer minor version may add some)."""
    for key, types in _FIELD_TYPES.items():
        value = meta.get(key)
        if value is None:
            continue
        bad_bool = isinstance(value, bool) and bool not in types
        if bad_bool or not isinstance(value, types) or (isinstance(value, float) and not math.isfinite(value)):
            want = " or ".join(t.__name__ for t in types)
            raise NotAParadiseTrace(f"{f}: metadata field {key!r} is {_show(value)}, expected {want}")
    for key in ("pes", "world_size"):
        n = meta.get(key)
        if n is not None and not 1 <= n <= MAX_PES:
            raise NotAParadiseTrace(f"{f}: metadata field {key!r} is {n}, expected 1..{MAX_PES}")
    pe = meta.get("pe")
    if pe is not None and not 0 <= pe < min(MAX_PES, meta.get("pes") or MAX_PES):
        raise NotAParadiseTrace(f"{f}: metadata field 'pe' is {pe}, outside 0..{(meta.get('pes') or MAX_PES) - 1}")


def _show(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:39] + "…"


def check_columns(f: Path, schema: pa.Schema) -> None:
    """Every known column present has the format's type family: integers stay integers, text text."""
    for name, typ, _ in COLUMNS:
        if name not in schema.names:
            continue
        got = schema.field(name).type
        if pa.types.is_dictionary(typ):
            ok = any(t(got) for t in _STRINGISH) or (
                pa.types.is_dictionary(got) and any(t(got.value_type) for t in _STRINGISH))
        elif pa.types.is_integer(typ):
            ok = pa.types.is_integer(got)
        else:
            ok = any(t(got) for t in _STRINGISH) if any(t(typ) for t in _STRINGISH) else got == typ
        if not ok and not pa.types.is_null(got):
            raise NotAParadiseTrace(f"{f}: column {name!r} is {got}, expected {typ}")


def column_ranges(pf: pq.ParquetFile, names: tuple[str, ...]) -> dict[str, tuple[Any, Any, int]] | None:
    """(min, max, nulls) per column from the footer statistics; None when a row group lacks them."""
    md = pf.metadata
    index = {pf.schema_arrow.names[i]: i for i in range(len(pf.schema_arrow.names))}
    out: dict[str, tuple[Any, Any, int]] = {}
    for name in names:
        if name not in index:
            continue
        lo = hi = None
        nulls = 0
        for g in range(md.num_row_groups):
            rg = md.row_group(g)
            if rg.num_rows == 0:
                continue
            stats = rg.column(index[name]).statistics
            if stats is None or not stats.has_null_count:
                return None
            nulls += stats.null_count
            if stats.null_count == rg.num_rows:
                continue
            if not stats.has_min_max:
                return None
            lo = stats.min if lo is None else min(lo, stats.min)
            hi = stats.max if hi is None else max(hi, stats.max)
        out[name] = (lo, hi, nulls)
    return out


def scan_ranges(f: Path, names: tuple[str, ...]) -> dict[str, tuple[Any, Any, int]]:
    """The same as column_ranges, by one DuckDB scan (files written without statistics), on the
    process's shared DuckDB (the store validates files before any engine exists)."""
    import duckdb

    from paradise.store.connection import connect

    con = connect()
    try:
        have = [r[0] for r in con.execute("SELECT name FROM parquet_schema($f)", {"f": str(f)}).fetchall()]
        cols = [n for n in names if n in have]
        sel = ", ".join(f"min({c}), max({c}), count(*) - count({c})" for c in cols)
        row = con.execute(f"SELECT {sel} FROM read_parquet($f)", {"f": str(f)}).fetchone()
    except duckdb.Error as exc:
        raise NotAParadiseTrace(f"{f}: unreadable data ({str(exc).splitlines()[0][:120]})") from None
    finally:
        con.close()
    return {c: (row[3 * i], row[3 * i + 1], int(row[3 * i + 2])) for i, c in enumerate(cols)}


def check_values(f: Path, pf: pq.ParquetFile, meta: dict[str, Any]) -> None:
    """No null kind/pe/t0, PEs within 0..pes-1 (and equal to the file's own PE), times in range."""
    names = ("kind", "pe", "t0", "t1", "peer_pe", "bytes")
    ranges = column_ranges(pf, names)
    if ranges is None:
        ranges = scan_ranges(f, names)
    for name in ("kind", "pe", "t0"):
        if name in ranges and ranges[name][2]:
            raise NotAParadiseTrace(f"{f}: column {name!r} has {ranges[name][2]:,} null value(s)")
    if "pe" in ranges and ranges["pe"][0] is not None:
        lo, hi, _ = ranges["pe"]
        top = min(MAX_PES, meta.get("pes") or MAX_PES) - 1
        if lo < 0 or hi > top:
            raise NotAParadiseTrace(f"{f}: column 'pe' holds {lo if lo < 0 else hi}, outside 0..{top}")
        own = meta.get("pe")
        if own is not None and (lo != own or hi != own):
            raise NotAParadiseTrace(f"{f}: the file of PE {own} holds rows of PE {lo if lo != own else hi}")
    _check_messages(f, ranges, pf.metadata.num_rows)
    for name in ("t0", "t1"):
        if name in ranges and ranges[name][0] is not None:
            lo, hi, _ = ranges[name]
            if lo < -MAX_ABS_TIME_NS or hi > MAX_ABS_TIME_NS:
                raise NotAParadiseTrace(f"{f}: column {name!r} holds {lo if lo < -MAX_ABS_TIME_NS else hi} ns, "
                                        f"beyond ±2^62 ns (damaged times)")


def _check_messages(f: Path, ranges: dict[str, tuple[Any, Any, int]], rows: int) -> None:
    """peer_pe a PE number below MAX_PES, or -1 (none); `bytes` whose sums cannot pass int64."""
    if ranges.get("peer_pe", (None,))[0] is not None:
        lo, hi, _ = ranges["peer_pe"]
        if lo < -1 or hi >= MAX_PES:  # -1: no source PE (Projections logs, as imported)
            raise NotAParadiseTrace(f"{f}: column 'peer_pe' holds {lo if lo < 0 else hi}, outside -1..{MAX_PES - 1}")
    if ranges.get("bytes", (None,))[0] is not None:
        lo, hi, _ = ranges["bytes"]
        if max(abs(lo), abs(hi)) * rows > MAX_FILE_BYTES_SUM:
            raise NotAParadiseTrace(f"{f}: column 'bytes' holds {hi if abs(hi) >= abs(lo) else lo} over {rows:,} "
                                    f"rows: sums of message bytes could pass int64 (at most 2^58 per file)")
