"""Arrow columns and per-PE Parquet files for the synthetic traces: shared by the charm and torch designs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from paradise.engines.summary import SummaryBuilder
from paradise.format import SCHEMA, WRITE_OPTIONS, make_metadata
from paradise.format.summary import SummarizingWriter

ROW_GROUP_ROWS = 122_880
"""Parquet row group size: DuckDB reads row groups in parallel (its own default vector multiple)."""
CHUNK_ROWS = 1 << 20
"""Rows built in memory at a time per PE file: the generator's memory bound (tens of MB)."""


def dict_col(codes: np.ndarray, vocab: list[str], valid: np.ndarray | None = None) -> pa.DictionaryArray:
    """A dictionary column from integer codes into vocab; rows where valid is False are null."""
    mask = None if valid is None else ~valid
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32), mask=mask), pa.array(vocab, pa.string()))


def int_col(values: np.ndarray, typ: pa.DataType, valid: np.ndarray | None = None) -> pa.Array:
    """An integer column; rows where valid is False are null."""
    return pa.array(values.astype(typ.to_pandas_dtype(), copy=False), typ, mask=None if valid is None else ~valid)


def table(cols: dict[str, pa.Array], rows: int) -> pa.Table:
    """A table of SCHEMA from the given columns, every other column null."""
    arrays = [cols[f.name] if f.name in cols else pa.nulls(rows, f.type) for f in SCHEMA]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


class PeFile:
    """One PE's Parquet file, written chunk by chunk under a hidden temporary name and renamed
    into place when complete (a killed generator leaves no file that looks finished)."""

    def __init__(self, out: Path, pe: int, **meta: Any) -> None:
        self.path = out / f"pe-{pe:05d}.parquet"
        self.tmp = out / f".pe-{pe:05d}.parquet.tmp"
        schema = SCHEMA.with_metadata(make_metadata(pe=pe, complete=True, **meta))
        self.writer = SummarizingWriter(self.tmp, schema, SummaryBuilder(), **WRITE_OPTIONS)
        self.rows = 0

    def write(self, t: pa.Table) -> None:
        self.writer.write_table(t, row_group_size=ROW_GROUP_ROWS)
        self.rows += t.num_rows

    def close(self) -> int:
        self.writer.close()
        self.tmp.replace(self.path)
        return self.rows
