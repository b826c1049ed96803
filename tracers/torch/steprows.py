"""The rows every training step makes (its `step` row, compute phases, DDP bucket all-reduces),
kept as flat lists of values and packed at the flush into int64 rows for the rank's spool
(tracers.spool; strings as codes of a per-rank table, nulls as NULL).

The hooks append a step's values to the writer's own flat lists, and the step hands them over
by one list extend (`add_step`: where its values end, its number, start and end; nothing built per row);
a flush packs all steps' rows into one array('q'), column by column, and hands its bytes to one
write(): no numpy, no Arrow and no Parquet in the training process (paradise.format.compact
converts the spool after the run). Packing at the flush instead of per step: what a traced step
pays is mostly its cold entries into Python code (the training step has evicted it), so code run
once for many steps costs less than the same code entered in every step. Rows that are not
per-step (marks, failures, torch.distributed calls, checkpoint I/O, the program's own
record_event rows) go as tuples (`append`), written after the packed rows of the same flush.

Row order in a flush: step rows, phase rows, bucket rows, then the appended rows, which keeps the
order rows with equal t0 were written in (a step row before its first forward phase); the
conversion sorts each rank's rows by t0, stably.
"""

from __future__ import annotations

import time
from array import array
from itertools import chain, repeat
from operator import floordiv, lt, sub
from pathlib import Path
from typing import Any

from paradise.format import row_tuple
from paradise.format.spool import NULL
from tracers.spool import Spool

PHASE_WIDTH = 3  # name, t0, t1 (tracers.torch.tracer.Tracer._phases)
BUCKET_WIDTH = 7  # t0, t1, obj, bytes, dtype, group, group_size
LAYOUT = ("kind", "pe", "t0", "t1", "cat", "coll", "obj", "name", "bytes", "step", "group", "group_size", "dtype")
"""Fields of a packed torch row (the other columns are null)."""
ROW_INTS = len(LAYOUT)
CHUNK_WIDTH = 5  # StepRowWriter.chunks
FLUSH_ROWS = 50_000
"""Rows held before a flush."""
FLUSH_INTERVAL_S = 2.0
"""Longest time appended rows wait in memory (checked every 1024 rows; steps also flush on time)."""


_COLUMN = {name: i for i, name in enumerate(LAYOUT)}


def _fill(out: array, first: int, n: int, **columns: Any) -> None:
    """Rows first..first+n of `out` (ROW_INTS ints each): a column given an int holds it in every
    row, one given a list holds its values (n of them)."""
    if not n:
        return
    lo, hi = first * ROW_INTS, (first + n) * ROW_INTS
    for name, values in columns.items():
        at = lo + _COLUMN[name]
        out[at:hi:ROW_INTS] = array("q", (values,)) * n if type(values) is int else array("q", values)


def _ints(values: list[Any]) -> list[int]:
    """Ints that may be None, with None as NULL (a Python loop only when there is a None)."""
    if None not in values:
        return values
    return [NULL if v is None else v for v in values]


def _tags(t0: list[int], chunks: list[int], end_at: int, width: int) -> list[int]:
    """The step column of rows handed over in chunks (`chunks`: CHUNK_WIDTH values per add_step,
    the rows' end offset at `end_at`): the chunk's step for a row starting at or after its start.
    A run-length expansion (each chunk's step and start repeated over its rows, in C); Python runs
    per row only for a flush that holds a row starting before its step's start (rare)."""
    ends = chunks[end_at::CHUNK_WIDTH]
    counts = list(map(floordiv, map(sub, ends, [0, *ends[:-1]]), repeat(width)))
    step = list(chain.from_iterable(map(repeat, chunks[2::CHUNK_WIDTH], counts)))
    start = list(chain.from_iterable(map(repeat, chunks[3::CHUNK_WIDTH], counts)))
    if not any(map(lt, t0, start)):
        return step
    return [n if t >= s else NULL for t, n, s in zip(t0, step, start)]


class Codes(dict):
    """String -> code in the rank's string table (None -> NULL); `texts` lists the strings in code
    order. Python runs only for new strings (`__missing__`)."""

    def __init__(self) -> None:
        super().__init__({None: NULL})
        self.texts: list[str] = []

    def __missing__(self, key: str) -> int:
        code = self[key] = len(self.texts)
        self.texts.append(key)
        return code


class StepRowWriter:
    """One rank's spool writer: per-step rows packed at hand-over (module doc), other rows as tuples."""

    def __init__(self, directory: Any, pe: int, *, stem: str | None = None, flush_rows: int = FLUSH_ROWS,
                 flush_interval_s: float = FLUSH_INTERVAL_S, **metadata: Any) -> None:
        self.pe = pe
        self.metadata = dict(metadata, pe=pe)
        self.flush_rows = flush_rows
        self.flush_interval_ns = int(flush_interval_s * 1e9)
        self.codes = code = Codes()
        self._sent = 0  # strings already in the spool
        self.spool = Spool(Path(directory), stem or f"pe-{pe:05d}", LAYOUT, {}, self.metadata)
        # Filled by the tracer's hooks (the same list objects for the writer's life):
        self.phases: list[Any] = []  # PHASE_WIDTH values per phase row
        self.buckets: list[Any] = []  # BUCKET_WIDTH values per bucket row
        self.chunks: list[int] = []  # per step handed over: end in phases, end in buckets, step, start, t1
        # constant codes of the packed kinds (interned once, first in the table)
        self._step = code["step"]
        self._phase, self._compute = code["phase"], code["compute"]
        self._coll, self._bucket, self._ddp, self._allreduce = (
            code["collective"], code["ddp_bucket"], code["ddp"], code["allreduce"])
        self._rows: list[tuple] = []
        self._last_flush = time.monotonic_ns()
        self._closed = False
        self.rows_written = 0

    def add_step(self, step: int | None, start: int | None, t1: int | None) -> None:
        """Closes a step's chunk: the phases and buckets appended since the last chunk belong to it;
        a step row from `start` to t1 when t1 is given; rows starting at or after `start` tagged
        with `step` (all untagged when step is None). One list extend (Tracer.end_step makes the
        same one through a bound `chunks.extend`: no frame)."""
        self.chunks.extend((len(self.phases), len(self.buckets), NULL if step is None else step, start or 0,
                            NULL if t1 is None else t1))

    def _packed(self) -> memoryview:
        """The rows of the closed chunks, packed (LAYOUT order) as bytes, taken out (the values of
        a step in progress stay): each column written at once by an array slice assignment (a C
        loop), step rows first, then phase rows, then bucket rows."""
        chunks = self.chunks[:]
        self.chunks.clear()
        p_end, b_end = chunks[-CHUNK_WIDTH], chunks[-CHUNK_WIDTH + 1]
        phases, buckets = self.phases[:p_end], self.buckets[:b_end]
        del self.phases[:p_end], self.buckets[:b_end]  # in place: the hooks hold these lists
        code = self.codes
        c_step, c_start, c_t1 = chunks[2::CHUNK_WIDTH], chunks[3::CHUNK_WIDTH], chunks[4::CHUNK_WIDTH]
        if NULL in c_step or NULL in c_t1:  # chunks that close no step (rows written untagged)
            steps = [k for k, (n, t1) in enumerate(zip(c_step, c_t1)) if n != NULL and t1 != NULL]
            c_start, c_t1, c_step = ([c[k] for k in steps] for c in (c_start, c_t1, c_step))
        ns, npz, nb = len(c_step), len(phases) // PHASE_WIDTH, len(buckets) // BUCKET_WIDTH
        out = array("q", (NULL,)) * (ROW_INTS * (ns + npz + nb))
        _fill(out, 0, ns, kind=self._step, pe=self.pe, name=self._step, t0=c_start, t1=c_t1, step=c_step)
        t0 = phases[1::PHASE_WIDTH]
        _fill(out, ns, npz, kind=self._phase, pe=self.pe, cat=self._compute, t0=t0, t1=phases[2::PHASE_WIDTH],
              name=list(map(code.__getitem__, phases[0::PHASE_WIDTH])),
              step=_tags(t0, chunks, 0, PHASE_WIDTH))
        t0 = buckets[0::BUCKET_WIDTH]
        _fill(out, ns + npz, nb, kind=self._coll, pe=self.pe, cat=self._bucket, coll=self._ddp, name=self._allreduce,
              t0=t0, t1=buckets[1::BUCKET_WIDTH], obj=_ints(buckets[2::BUCKET_WIDTH]),
              bytes=_ints(buckets[3::BUCKET_WIDTH]), dtype=list(map(code.__getitem__, buckets[4::BUCKET_WIDTH])),
              group=list(map(code.__getitem__, buckets[5::BUCKET_WIDTH])),
              group_size=_ints(buckets[6::BUCKET_WIDTH]), step=_tags(t0, chunks, 1, BUCKET_WIDTH))
        return memoryview(out).cast("B")

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

    def flush(self) -> None:
        """Appends everything held so far to the spool: one write()."""
        self._last_flush = time.monotonic_ns()
        if self._closed:
            return
        data = self._packed() if self.chunks else b""
        n = len(data) // (8 * ROW_INTS)
        rows, self._rows = self._rows, []
        texts = self.codes.texts
        new, self._sent = texts[self._sent:], len(texts)
        self.spool.write(data, new, [list(r) for r in rows])
        self.rows_written += n + len(rows)

    def close(self, complete: bool = True) -> Path:
        """Flushes and closes the spool, marked complete or not."""
        if not self._closed:
            self.flush()
            self._closed = True
            self.metadata["complete"] = complete
            self.spool.close(complete)
        return self.spool.path
