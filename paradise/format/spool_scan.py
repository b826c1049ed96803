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

from paradise.format.compact import LOCK_WAIT_S, _lock, _Reader
from paradise.format.spool import ROWS, STRS, TUPL

MESSAGE_KINDS = ("send", "exec")
MESSAGE_SCHEMA = pa.schema([("kind", pa.string()), ("pe", pa.int32()), ("msg", pa.int64()), ("t0", pa.int64())])
"""The message rows' file: what paradise.sql's clock_message_bounds reads of a trace's rows."""
SCRATCH_WRITE = {"compression": "none", "use_dictionary": ["kind"], "write_statistics": False}
"""How the message rows' file is written: read once and removed, so as cheap to write as can be
(pyarrow's default compression, dictionaries and statistics: 8x the time for 2/3 of the bytes)."""


def final_metadata(spool: Path) -> dict[str, Any]:
    """The metadata the spool's Parquet file will hold (its header's, updated by every metadata
    record), without reading its rows or strings: compact._Reader's walk, stepping over them."""
    with open(spool, "rb") as fh:
        reader = _Reader(spool, fh, skip=(STRS, ROWS, TUPL))
        for _ in reader.items():
            pass  # nothing is yielded: metadata records are taken in on the way
        return reader.metadata


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
        with pq.ParquetWriter(out, MESSAGE_SCHEMA, **SCRATCH_WRITE) as writer:
            for packed, item in reader.items():
                table = _packed_messages(reader, item) if packed else _tuple_messages(reader.tuples(item))
                if table.num_rows:
                    writer.write_table(table)
    return True
