"""Helpers shared by the GPU analyses (gpu_kernels, gpu_idle, gpu_queue, gpu_launches, annotations,
step_critical_path): whether a trace holds device rows, and JSON-safe records of small tables."""

from __future__ import annotations

from typing import Any

import pandas as pd

from paradise.analyses.base import json_scalar
from paradise.importers import training_like
from paradise.store import TraceHandle

KERNEL_TYPES = {1: "computation", 2: "communication", 4: "memory"}
"""Kernel type bits, as the gpu_* SQL classifies device work: NCCL/RCCL kernels are
communication, memcpy/memset rows memory, every other kernel computation (HTA's rule)."""


def has_device_rows(trace: TraceHandle) -> bool:
    """A training trace with at least one row on a device stream, read from Parquet statistics
    (no scan): the GPU analyses have nothing to say about CPU-only traces."""
    if not training_like(trace.source):
        return False
    import pyarrow.parquet as pq

    for f in trace.files:
        md = pq.ParquetFile(f).metadata
        col = md.schema.to_arrow_schema().get_field_index("stream")
        if col < 0:
            continue
        for i in range(md.num_row_groups):
            c = md.row_group(i).column(col)
            st = c.statistics
            if st is None or st.null_count is None or st.null_count < c.num_values:
                return True
    return False


def type_label(mask: int) -> str:
    """'computation', 'communication+memory', ... for a mask of KERNEL_TYPES bits; 'idle' for 0."""
    names = [n for b, n in KERNEL_TYPES.items() if mask & b]
    return "+".join(names) if names else "idle"


def records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """A small table as JSON-safe records."""
    return [{k: json_scalar(v) for k, v in row.items()} for row in df.to_dict("records")]
