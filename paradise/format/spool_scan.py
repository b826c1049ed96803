"""What the trace's writer needs from its spools before converting them (paradise.store.compaction):
each spool's final metadata, read from its header and metadata records alone, and its message rows
(the sends and execs with a `msg`: kind, pe, msg, t0) as a small Parquet file, read from the packed
rows without building the other columns.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from paradise.format.compact import LOCK_WAIT_S, SpoolError, _head, _json, _lock, _Reader
from paradise.format.spool import HEAD, META, RECORD, TAGS

MESSAGE_KINDS = ("send", "exec")
MESSAGE_SCHEMA = pa.schema([("kind", pa.string()), ("pe", pa.int32()), ("msg", pa.int64()), ("t0", pa.int64())])
"""The message rows' file: what paradise.sql's clock_message_bounds reads of a trace's rows."""


def final_metadata(spool: Path) -> dict[str, Any]:
    """The metadata the spool's Parquet file will hold (its header's, updated by every metadata
    record), without reading its rows: a record's head says how far to skip."""
    meta: dict[str, Any] | None = None
    with open(spool, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        pos = 0
        while pos + RECORD.size <= size:
            fh.seek(pos)
            tag, reserved, length = RECORD.unpack(fh.read(RECORD.size))
            if tag not in TAGS or reserved != 0 or pos + RECORD.size + length > size:
                break  # torn or damaged: converting it says which
            if tag == HEAD and meta is None:
                meta = dict(_head(spool, memoryview(fh.read(length)))[3])
            elif tag == META and meta is not None:
                meta.update(_json(spool, tag, memoryview(fh.read(length)), dict))
            pos += RECORD.size + length
    if meta is None:
        raise SpoolError(f"{spool}: not a paradise spool (no header record)")
    return meta


def _packed_messages(reader: _Reader, data: memoryview) -> pa.Table:
    """The message rows of one packed rows record, picked with numpy from the int64 matrix."""
    cols, null = reader.columns, reader.null
    arr = np.frombuffer(data, dtype="<i8").reshape(-1, len(cols))
    if "msg" not in cols:
        return MESSAGE_SCHEMA.empty_table()
    kind, msg = arr[:, cols.index("kind")], arr[:, cols.index("msg")]
    codes = [i for i, t in enumerate(reader.texts) if t in MESSAGE_KINDS]  # the string table, not the rows
    keep = np.isin(kind, codes) & (msg != null)
    kinds = pa.DictionaryArray.from_arrays(
        pa.array(np.isin(kind[keep], [c for c in codes if reader.texts[c] == "exec"]).astype(np.int32)),
        pa.array(MESSAGE_KINDS)).cast(pa.string())
    pe = arr[keep, cols.index("pe")] if "pe" in cols else np.full(int(keep.sum()), reader.fill.get("pe", 0))
    return pa.table([kinds, pa.array(pe.astype(np.int32)), pa.array(msg[keep]),
                     pa.array(arr[keep, cols.index("t0")])], schema=MESSAGE_SCHEMA)


def _tuple_messages(table: pa.Table) -> pa.Table:
    kind = table["kind"].cast(pa.string())
    keep = pc.and_(pc.is_in(kind, pa.array(MESSAGE_KINDS)), pc.is_valid(table["msg"]))
    return pa.table([kind.filter(keep), *(table[c].filter(keep) for c in ("pe", "msg", "t0"))], schema=MESSAGE_SCHEMA)


def write_messages(spool: Path, out: Path, *, wait_s: float = LOCK_WAIT_S) -> bool:
    """Writes the spool's message rows to `out` (MESSAGE_SCHEMA), under the spool's lock (no live
    writer); False when another process converted the spool meanwhile."""
    with open(spool, "rb") as fh:
        _lock(spool, fh, wait_s)
        if os.fstat(fh.fileno()).st_nlink == 0:
            return False
        reader = _Reader(spool, fh)
        with pq.ParquetWriter(out, MESSAGE_SCHEMA) as writer:
            for packed, item in reader.items():
                table = _packed_messages(reader, item) if packed else _tuple_messages(reader.tuples(item))
                if table.num_rows:
                    writer.write_table(table)
    return True
