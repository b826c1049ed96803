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

import itertools
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


def _tagged_steps(t0: np.ndarray, tags: list[int], width: int) -> tuple[np.ndarray, np.ndarray]:
    """(step, valid) of rows emitted in chunks: tags are (end offset in values, step, start) per
    chunk; a row gets its chunk's step when it starts at or after the chunk's start, else null."""
    tag = np.array(tags, dtype=np.int64).reshape(-1, 3)
    counts = np.diff(tag[:, 0], prepend=0) // width
    step = np.repeat(tag[:, 1], counts)
    start = np.repeat(tag[:, 2], counts)
    return step, (step != NO_STEP) & (t0 >= start)


class _Codes(dict):
    """String -> dictionary code, a new code for each string not seen yet (None -> -1: null).

    `map(codes.__getitem__, values)` codes a list at C speed: Python runs only for new strings."""

    def __init__(self, *known: str) -> None:
        super().__init__({None: -1})
        for text in known:
            self[text]

    def __missing__(self, key: str) -> int:
        code = self[key] = len(self) - 1
        return code

    def column(self, *parts: Any) -> pa.Array:
        """A dictionary<string> column of the parts' rows: a list of strings (or None), or
        (a string, a count) for a run of one value."""
        chunks = [np.full(p[1], self[p[0]], dtype=np.int32) if isinstance(p, tuple)
                  else np.fromiter(map(self.__getitem__, p), np.int32, len(p)) for p in parts]
        idx = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)
        texts = [k for k in self if k is not None]
        return pa.DictionaryArray.from_arrays(idx, pa.array(texts, type=pa.string()), mask=idx < 0)


def _by_kind(counts: tuple[int, int, int], values: tuple[Any, Any, Any], typ: pa.DataType) -> pa.Array:
    """A column over the step, phase and bucket rows: per kind a constant string, an int array
    (with its validity), or None for nulls."""
    if all(isinstance(v, str) or v is None for v in values):  # a constant string per kind
        dictionary = sorted({v for v in values if v is not None})
        code = [dictionary.index(v) if v is not None else -1 for v in values]
        idx = np.repeat(np.array(code, dtype=np.int32), counts)
        return pa.DictionaryArray.from_arrays(idx, pa.array(dictionary, type=pa.string()), mask=idx < 0)
    data, valid = [], []
    for count, v in zip(counts, values):
        if v is None:
            data.append(np.zeros(count, dtype=np.int64))
            valid.append(np.zeros(count, dtype=bool))
        else:
            arr, ok = v if isinstance(v, tuple) else (v, None)
            data.append(np.asarray(arr, dtype=np.int64))
            valid.append(np.ones(count, dtype=bool) if ok is None else ok)
    mask = ~np.concatenate(valid)
    return pa.array(np.concatenate(data).astype(typ.to_pandas_dtype()), mask=mask if mask.any() else None, type=typ)


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

    def _pending_table(self) -> pa.Table | None:
        steps, self.steps = self.steps, []
        phases, self.phases, phase_tags, self.phase_tags = self.phases, [], self.phase_tags, []
        buckets, self.buckets, bucket_tags, self.bucket_tags = self.buckets, [], self.bucket_tags, []
        rows = super()._pending_table()
        counts = (len(steps) // 3, len(phases) // PHASE_WIDTH, len(buckets) // BUCKET_WIDTH)
        n = sum(counts)
        if not n:
            return rows
        s = np.array(steps, dtype=np.int64).reshape(-1, 3)
        pt0 = np.array(phases[1::PHASE_WIDTH], dtype=np.int64)
        bt0 = np.array(buckets[0::BUCKET_WIDTH], dtype=np.int64)
        nb = counts[2]
        columns = {
            "kind": _by_kind(counts, ("step", "phase", "collective"), _TYPES["kind"]),
            "pe": pa.array(np.full(n, self.pe, dtype=np.int32)),
            "t0": pa.array(np.concatenate([s[:, 0], pt0, bt0])),
            "t1": pa.array(np.concatenate([s[:, 1], np.array(phases[2::PHASE_WIDTH], dtype=np.int64),
                                           np.array(buckets[1::BUCKET_WIDTH], dtype=np.int64)])),
            "cat": _by_kind(counts, (None, "compute", "ddp_bucket"), _TYPES["cat"]),
            "coll": _by_kind(counts, (None, None, "ddp"), _TYPES["coll"]),
            "obj": _by_kind(counts, (None, None, buckets[2::BUCKET_WIDTH]), _TYPES["obj"]),
            "name": _Codes().column(("step", counts[0]), phases[0::PHASE_WIDTH], ("allreduce", nb)),
            "bytes": _by_kind(counts, (None, None, buckets[3::BUCKET_WIDTH]), _TYPES["bytes"]),
            "step": _by_kind(counts, (s[:, 2], _tagged_steps(pt0, phase_tags, PHASE_WIDTH) if counts[1] else None,
                                         _tagged_steps(bt0, bucket_tags, BUCKET_WIDTH) if nb else None),
                             _TYPES["step"]),
            "group": _Codes().column((None, n - nb), buckets[5::BUCKET_WIDTH]),
            "group_size": _by_kind(counts, (None, None, _valid(buckets[6::BUCKET_WIDTH])), _TYPES["group_size"]),
            "dtype": _Codes().column((None, n - nb), buckets[4::BUCKET_WIDTH]),
        }
        schema = SCHEMA.with_metadata(make_metadata(**self.metadata))
        table = pa.Table.from_arrays([columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in SCHEMA],
                                     schema=schema)
        if rows is not None:
            table = pa.concat_tables([table, rows]).unify_dictionaries()
        return table

    def _table(self, rows: list[tuple]) -> pa.Table:
        """The appended rows (marks, failures, torch.distributed calls, checkpoint I/O) as a table of
        SCHEMA: string columns coded by _Codes, the columns no row fills as nulls."""
        n = len(rows)
        columns = list(itertools.zip_longest(*rows))  # pads short rows (missing tail = null)
        arrays = []
        for i, field in enumerate(SCHEMA):
            values = columns[i] if i < len(columns) else None
            if values is None or values.count(None) == n:
                arrays.append(pa.nulls(n, field.type))
            elif pa.types.is_dictionary(field.type):
                arrays.append(_Codes().column(list(values)))
            else:
                arrays.append(pa.array(values, type=field.type))
        return pa.Table.from_arrays(arrays, schema=SCHEMA.with_metadata(make_metadata(**self.metadata)))


def _valid(values: list[int | None]) -> tuple[list[int], np.ndarray]:
    """Ints that may be None: (values with None as 0, validity)."""
    ok = np.array([v is not None for v in values], dtype=bool)
    return [0 if v is None else v for v in values], ok
