"""Record model outputs from an evaluation loop into `outputs.parquet` for `paradise compare`.

    with OutputsWriter("run_dir") as out:
        for batch in loader:
            out.add(items=batch_ids, labels=y, logprobs=model(x).log_softmax(-1))

One row per evaluation item: item (string), label (int32), logprobs (list<float32>) or pred (int32).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from paradise.format import OUTPUTS_FILE

LOGPROBS_SCHEMA = pa.schema([("item", pa.string()), ("label", pa.int32()), ("logprobs", pa.list_(pa.float32()))])
PRED_SCHEMA = pa.schema([("item", pa.string()), ("label", pa.int32()), ("pred", pa.int32())])


def _numpy(x: Any) -> np.ndarray:
    """Accepts numpy arrays, lists and torch tensors (without importing torch)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


class OutputsWriter:
    """Appends batches of per-item outputs; writes `<dir>/outputs.parquet` atomically on close."""

    def __init__(self, directory: str | os.PathLike, *, force: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / OUTPUTS_FILE
        if self.path.exists() and not force:
            raise FileExistsError(f"{self.path}: already exists; pass force=True to overwrite it")
        self._tmp = self.directory / f".{OUTPUTS_FILE}.tmp"
        self._writer: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None
        self.rows = 0

    def add(
        self,
        items: Sequence[str],
        labels: Any,
        *,
        logprobs: Any | None = None,
        preds: Any | None = None,
    ) -> None:
        """One batch: log-probabilities (n × options) or, without them, predicted labels."""
        if (logprobs is None) == (preds is None):
            raise ValueError("give exactly one of logprobs= or preds=")
        items = [str(i) for i in items]
        labels = _numpy(labels).astype(np.int32).reshape(-1)
        if logprobs is not None:
            lp = _numpy(logprobs).astype(np.float32)
            if lp.ndim != 2 or lp.shape[0] != len(items):
                raise ValueError(f"logprobs must be (items, options), got {lp.shape} for {len(items)} items")
            values = pa.FixedSizeListArray.from_arrays(pa.array(lp.reshape(-1)), lp.shape[1]).cast(pa.list_(pa.float32()))
            table = pa.Table.from_arrays([pa.array(items), pa.array(labels), values], schema=LOGPROBS_SCHEMA)
        else:
            preds = _numpy(preds).astype(np.int32).reshape(-1)
            table = pa.Table.from_arrays([pa.array(items), pa.array(labels), pa.array(preds)], schema=PRED_SCHEMA)
        if len(labels) != len(items):
            raise ValueError(f"{len(items)} items but {len(labels)} labels")
        if self._writer is None:
            self._schema = table.schema
            self._writer = pq.ParquetWriter(self._tmp, self._schema, compression="zstd")
        elif table.schema != self._schema:
            raise ValueError("all batches must carry the same kind of outputs (logprobs or preds)")
        self._writer.write_table(table)
        self.rows += table.num_rows

    def close(self) -> Path:
        if self._writer is None:
            raise ValueError("no outputs were added")
        self._writer.close()
        os.replace(self._tmp, self.path)
        return self.path

    def __enter__(self) -> OutputsWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        elif self._writer is not None:
            self._writer.close()
            self._tmp.unlink(missing_ok=True)
