"""The rows every training step makes (its `step` row, compute phases, DDP bucket all-reduces),
kept as flat lists of values per kind and packed at the flush into int64 rows for the rank's
spool (tracers.spool; strings as codes of a per-rank table, nulls as NULL).

A step hands over its rows with a few list extends; the flush packs the lists in a handful of
vectorised numpy calls and hands them to one write(): no Arrow and no Parquet in the training
process (paradise.format.compact converts the spool after the run). Rows that are not per-step
(marks, failures, torch.distributed calls, checkpoint I/O, the program's own record_event rows)
go as tuples (`append`), written after the packed rows of the same flush.

Row order in a flush: step rows, phase rows, bucket rows, then the appended rows, which keeps the
order rows with equal t0 were written in (a step row before its first forward phase); the
conversion sorts each rank's rows by t0, stably.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from paradise.format import row_tuple
from paradise.format.spool import NULL
from tracers.spool import Spool

NO_STEP = -1
"""Tag of rows emitted outside a step (their step column is null)."""
PHASE_WIDTH = 3  # name, t0, t1 (tracers.torch.tracer.Tracer._phases)
BUCKET_WIDTH = 7  # t0, t1, obj, bytes, dtype, group, group_size
LAYOUT = ("kind", "pe", "t0", "t1", "cat", "coll", "obj", "name", "bytes", "step", "group", "group_size", "dtype")
"""Fields of a packed torch row (the other columns are null)."""
FLUSH_ROWS = 50_000
"""Appended rows held before a flush."""
FLUSH_INTERVAL_S = 2.0
"""Longest time appended rows wait in memory (checked every 1024 rows; steps also flush on time)."""


def _tagged_steps(t0: np.ndarray, tags: list[int], width: int) -> np.ndarray:
    """Step of rows emitted in chunks (NULL where none): tags are (end offset in values, step,
    start) per chunk; a row gets its chunk's step when it starts at or after the chunk's start."""
    tag = np.array(tags, dtype=np.int64).reshape(-1, 3)
    counts = np.diff(tag[:, 0], prepend=0) // width
    step = np.repeat(tag[:, 1], counts)
    start = np.repeat(tag[:, 2], counts)
    return np.where((step != NO_STEP) & (t0 >= start), step, NULL)


class Codes(dict):
    """String -> code in the rank's string table (None -> NULL); `texts` lists the strings in code
    order. `map(codes.__getitem__, values)` codes a list at C speed: Python runs only for new strings."""

    def __init__(self) -> None:
        super().__init__({None: NULL})
        self.texts: list[str] = []

    def __missing__(self, key: str) -> int:
        code = self[key] = len(self.texts)
        self.texts.append(key)
        return code


def _ints(values: list[Any]) -> np.ndarray:
    """Ints that may be None, as int64 with None as NULL."""
    return np.fromiter((NULL if v is None else v for v in values), np.int64, len(values))


class StepRowWriter:
    """One rank's spool writer: per-step rows as flat value lists (module doc), other rows as tuples."""

    def __init__(self, directory: Any, pe: int, *, stem: str | None = None, flush_rows: int = FLUSH_ROWS,
                 flush_interval_s: float = FLUSH_INTERVAL_S, **metadata: Any) -> None:
        self.pe = pe
        self.metadata = dict(metadata, pe=pe)
        self.flush_rows = flush_rows
        self.flush_interval_ns = int(flush_interval_s * 1e9)
        self.codes = Codes()
        self._sent = 0  # strings already in the spool
        self.spool = Spool(Path(directory), stem or f"pe-{pe:05d}", LAYOUT, {}, self.metadata)
        self.steps: list[int] = []  # t0, t1, step of each step row
        self.phases: list[Any] = []  # name, t0, t1 of each compute phase
        self.phase_tags: list[int] = []  # end offset in phases, step (NO_STEP), start per emitted chunk
        self.buckets: list[Any] = []  # BUCKET_WIDTH values per bucket row
        self.bucket_tags: list[int] = []
        self._rows: list[tuple] = []
        self._last_flush = time.monotonic_ns()
        self._closed = False
        self.rows_written = 0

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

    def append(self, row: tuple) -> None:
        """A row as a tuple in COLUMN_NAMES order (missing tail = null), written with the next flush."""
        rows = self._rows
        rows.append(row)
        n = len(rows)
        if n >= self.flush_rows or ((n & 1023) == 0 and time.monotonic_ns() - self._last_flush > self.flush_interval_ns):
            self.flush()

    def append_dict(self, **fields: Any) -> None:
        self.append(row_tuple(**fields))

    def set_metadata(self, **fields: Any) -> None:
        """Metadata from here on (the converted file holds the last value of each field)."""
        self.metadata.update(fields)
        if not self._closed:
            self.spool.meta(fields)

    def _packed(self) -> np.ndarray:
        """The step, phase and bucket rows held so far as an (n, len(LAYOUT)) int64 array, taken out."""
        steps, self.steps = self.steps, []
        phases, self.phases, phase_tags, self.phase_tags = self.phases, [], self.phase_tags, []
        buckets, self.buckets, bucket_tags, self.bucket_tags = self.buckets, [], self.bucket_tags, []
        ns, npz, nb = len(steps) // 3, len(phases) // PHASE_WIDTH, len(buckets) // BUCKET_WIDTH
        out = np.full((ns + npz + nb, len(LAYOUT)), NULL, dtype=np.int64)
        c = {name: i for i, name in enumerate(LAYOUT)}
        code = self.codes
        out[:, c["pe"]] = self.pe
        if ns:
            s = np.array(steps, dtype=np.int64).reshape(-1, 3)
            rows = out[:ns]
            rows[:, c["kind"]], rows[:, c["name"]] = code["step"], code["step"]
            rows[:, c["t0"]], rows[:, c["t1"]], rows[:, c["step"]] = s[:, 0], s[:, 1], s[:, 2]
        if npz:
            rows = out[ns:ns + npz]
            t0 = np.array(phases[1::PHASE_WIDTH], dtype=np.int64)
            rows[:, c["kind"]], rows[:, c["cat"]] = code["phase"], code["compute"]
            rows[:, c["name"]] = np.fromiter(map(code.__getitem__, phases[0::PHASE_WIDTH]), np.int64, npz)
            rows[:, c["t0"]], rows[:, c["t1"]] = t0, np.array(phases[2::PHASE_WIDTH], dtype=np.int64)
            rows[:, c["step"]] = _tagged_steps(t0, phase_tags, PHASE_WIDTH)
        if nb:
            rows = out[ns + npz:]
            t0 = np.array(buckets[0::BUCKET_WIDTH], dtype=np.int64)
            rows[:, c["kind"]], rows[:, c["cat"]] = code["collective"], code["ddp_bucket"]
            rows[:, c["coll"]], rows[:, c["name"]] = code["ddp"], code["allreduce"]
            rows[:, c["t0"]], rows[:, c["t1"]] = t0, np.array(buckets[1::BUCKET_WIDTH], dtype=np.int64)
            rows[:, c["obj"]], rows[:, c["bytes"]] = _ints(buckets[2::BUCKET_WIDTH]), _ints(buckets[3::BUCKET_WIDTH])
            for col, at in (("dtype", 4), ("group", 5)):
                rows[:, c[col]] = np.fromiter(map(code.__getitem__, buckets[at::BUCKET_WIDTH]), np.int64, nb)
            rows[:, c["group_size"]] = _ints(buckets[6::BUCKET_WIDTH])
            rows[:, c["step"]] = _tagged_steps(t0, bucket_tags, BUCKET_WIDTH)
        return out

    def flush(self) -> None:
        """Appends everything held so far to the spool: one write()."""
        self._last_flush = time.monotonic_ns()
        if self._closed:
            return
        packed = self._packed() if (self.steps or self.phases or self.buckets) else None
        rows, self._rows = self._rows, []
        texts = self.codes.texts
        new, self._sent = texts[self._sent:], len(texts)
        data = memoryview(packed).cast("B") if packed is not None else b""
        self.spool.write(data, new, [list(r) for r in rows])
        self.rows_written += (0 if packed is None else packed.shape[0]) + len(rows)

    def close(self, complete: bool = True) -> Path:
        """Flushes and closes the spool, marked complete or not."""
        if not self._closed:
            self.flush()
            self._closed = True
            self.metadata["complete"] = complete
            self.spool.close(complete)
        return self.spool.path
