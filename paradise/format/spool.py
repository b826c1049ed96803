"""The raw row spool: what a traced process appends while it runs, before it becomes Parquet.

A spool `pe-NNNNN.rows` is a sequence of records, each a 16-byte head (4-byte tag, 4 reserved
bytes, payload length as uint64, little-endian) and its payload:

* `HEAD` (first record, JSON): `spool` (SPOOL_VERSION), `columns` (the packed rows' fields, trace
  column names), `null` (the int64 null marker), `fill` (column -> constant of every packed row),
  `metadata` (trace metadata, paradise.format.METADATA_FIELDS).
* `STRS` (JSON list): strings interned since the last one; a string column's code is its index
  in all STRS lists of the file, concatenated. Written before the rows that use them.
* `ROWS`: packed rows, len(columns) int64 each, little-endian.
* `TUPL` (JSON list of lists): rows in COLUMN_NAMES order (missing tail = null), the rare rows
  a tracer does not pack; they follow the ROWS record of the same flush.
* `META` (JSON object): metadata fields updated from here on (the last one at a clean close holds
  `complete`).

A flush is one write() of its records, so a killed process leaves whole records plus at most one
torn trailing record, which the reader drops. Needs only the standard library: traced processes
import it (paradise.format.compact turns a spool into the trace's Parquet file).
"""

from __future__ import annotations

import json
import struct
from typing import Any

SPOOL_VERSION = 1
SUFFIX = ".rows"
RECORD = struct.Struct("<4sIQ")
"""Record head: tag, reserved (0), payload bytes."""
HEAD, STRS, ROWS, TUPL, META = b"HEAD", b"STRS", b"ROWS", b"TUPL", b"META"
TAGS = (HEAD, STRS, ROWS, TUPL, META)
NULL = -(2**63)
"""The packed rows' null marker (INT64_MIN: no real time, id, index or code takes it)."""


def record(tag: bytes, payload: bytes | memoryview) -> bytes:
    """The head of a record whose payload is `payload` (written right after it)."""
    return RECORD.pack(tag, 0, len(payload))


def _plain(value: Any) -> Any:
    """JSON for a value json does not know: an int-like (numpy, torch) as int, anything else as text."""
    return int(value) if hasattr(value, "__index__") else str(value)


def json_payload(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_plain).encode()


def head_payload(columns: tuple[str, ...] | list[str], fill: dict[str, int], metadata: dict[str, Any]) -> bytes:
    return json_payload({"spool": SPOOL_VERSION, "columns": list(columns), "null": NULL, "fill": fill,
                         "metadata": metadata})
