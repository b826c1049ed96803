"""The rows every training step makes (its `step` row, compute phases, DDP bucket all-reduces),
kept as flat lists of values per kind instead of one tuple per row.

A step hands over its rows with a few list extends; the flush turns the lists into Arrow columns
in a handful of vectorised calls (a tuple per row cost ~0.25 us to make and ~0.5 us to transpose
at the flush). Rows that are not per-step (marks, failures, torch.distributed calls, checkpoint
I/O, the program's own record_event rows) still go through TraceWriter.append.

Row order in a part: step rows, phase rows, bucket rows, then the appended rows, which keeps the
order the tuple path wrote rows with equal t0 in (a step row before its first forward phase);
compaction sorts each rank's rows by t0, stably.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from paradise.format import SCHEMA, make_metadata
from tracers.writer import TraceWriter

NO_STEP = -1
"""Tag of rows emitted outside a step (their step column is null)."""
PHASE_WIDTH = 3  # name, t0, t1 (tracers.torch.tracer.Tracer._phases)
BUCKET_WIDTH = 7  # t0, t1, obj, bytes, dtype, group, group_size

_TYPES = {f.name: f.type for f in SCHEMA}


def _tagged_steps(t0: np.ndarray, tags: list[int], width: int) -> pa.Array:
    """The step column of rows emitted in chunks: tags are (end offset in values, step, start) per
    chunk; a row gets its chunk's step when it starts at or after the chunk's start, else null."""
    tag = np.array(tags, dtype=np.int64).reshape(-1, 3)
    counts = np.diff(tag[:, 0], prepend=0) // width
    step = np.repeat(tag[:, 1], counts)
    start = np.repeat(tag[:, 2], counts)
    valid = (step != NO_STEP) & (t0 >= start)
    return pa.array(step.astype(np.int32), mask=~valid, type=_TYPES["step"])


def _dict(values: list[Any]) -> pa.Array:
    """A dictionary<string> column from Python strings (None allowed)."""
    return pa.array(values, type=pa.string()).dictionary_encode()


def _const(value: str, n: int) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, dtype=np.int32)), pa.array([value]))


def _table(n: int, columns: dict[str, pa.Array]) -> pa.Table:
    """A table of SCHEMA with the given columns (cast to their schema type) and the others null."""
    arrays = [columns[f.name].cast(f.type) if f.name in columns else pa.nulls(n, f.type) for f in SCHEMA]
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


class StepRowWriter(TraceWriter):
    """TraceWriter that also takes one rank's per-step rows as flat value lists (see module doc)."""

    def __init__(self, directory: Any, pe: int, **kwargs: Any) -> None:
        super().__init__(directory, pe, **kwargs)
        self.steps: list[int] = []  # t0, t1, step of each step row
        self.phases: list[Any] = []  # name, t0, t1 of each compute phase
        self.phase_tags: list[int] = []  # end offset in phases, step (NO_STEP), start per emitted chunk
        self.buckets: list[Any] = []  # BUCKET_WIDTH values per bucket row
        self.bucket_tags: list[int] = []

    def step_row(self, t0: int, t1: int, step: int) -> None:
        self.steps.extend((t0, t1, step))

    def add_phases(self, phases: list[Any], step: int | None, start: int | None) -> None:
        """Takes a chunk of Tracer._phases values; rows at or after `start` belong to `step`."""
        self.phases.extend(phases)
        self.phase_tags.extend((len(self.phases), NO_STEP if step is None else step, start or 0))

    def add_buckets(self, buckets: list[Any], step: int | None, start: int | None) -> None:
        """Takes a chunk of bucket rows (BUCKET_WIDTH values each), tagged like add_phases."""
        self.buckets.extend(buckets)
        self.bucket_tags.extend((len(self.buckets), NO_STEP if step is None else step, start or 0))

    def _pe_column(self, n: int) -> pa.Array:
        return pa.array(np.full(n, self.pe, dtype=np.int32))

    def _pending_table(self) -> pa.Table | None:
        tables = []
        steps, self.steps = self.steps, []
        phases, self.phases, phase_tags, self.phase_tags = self.phases, [], self.phase_tags, []
        buckets, self.buckets, bucket_tags, self.bucket_tags = self.buckets, [], self.bucket_tags, []
        if steps:
            s = np.array(steps, dtype=np.int64).reshape(-1, 3)
            n = len(s)
            tables.append(_table(n, {"kind": _const("step", n), "pe": self._pe_column(n),
                                     "t0": pa.array(s[:, 0]), "t1": pa.array(s[:, 1]), "name": _const("step", n),
                                     "step": pa.array(s[:, 2].astype(np.int32))}))
        if phases:
            t0 = np.array(phases[1::PHASE_WIDTH], dtype=np.int64)
            n = len(t0)
            tables.append(_table(n, {"kind": _const("phase", n), "pe": self._pe_column(n),
                                     "t0": pa.array(t0), "t1": pa.array(phases[2::PHASE_WIDTH], type=pa.int64()),
                                     "cat": _const("compute", n), "name": _dict(phases[0::PHASE_WIDTH]),
                                     "step": _tagged_steps(t0, phase_tags, PHASE_WIDTH)}))
        if buckets:
            t0 = np.array(buckets[0::BUCKET_WIDTH], dtype=np.int64)
            n = len(t0)
            col = {k: buckets[i::BUCKET_WIDTH] for i, k in enumerate(("t0", "t1", "obj", "bytes", "dtype", "group",
                                                                       "group_size"))}
            tables.append(_table(n, {"kind": _const("collective", n), "pe": self._pe_column(n),
                                     "t0": pa.array(t0), "t1": pa.array(col["t1"], type=pa.int64()),
                                     "cat": _const("ddp_bucket", n), "coll": _const("ddp", n),
                                     "obj": pa.array(col["obj"], type=pa.int64()), "name": _const("allreduce", n),
                                     "bytes": pa.array(col["bytes"], type=pa.int64()), "dtype": _dict(col["dtype"]),
                                     "group": _dict(col["group"]),
                                     "group_size": pa.array(col["group_size"], type=pa.int32()),
                                     "step": _tagged_steps(t0, bucket_tags, BUCKET_WIDTH)}))
        rows = super()._pending_table()
        if rows is not None:
            tables.append(rows.cast(SCHEMA))
        if not tables:
            return None
        return pa.concat_tables(tables).unify_dictionaries().replace_schema_metadata(make_metadata(**self.metadata))
