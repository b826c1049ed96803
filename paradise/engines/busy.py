"""Each PE's time accounting (overview_pe_time): the unions of its running intervals and of its
running and idle intervals, swept with numpy over the rows in the order the engine streams them
(the format's row order, no sort), and its span from overview_pe's rows. paradise/sql/
overview_pe_time.sql states the definitions; tests/accounting.py is the oracle."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from paradise.format.arrays import from_numpy, to_numpy, validity

QUERY = "overview_pe_time"
NONE = np.iinfo(np.int64).min
"""The running maximum end before a PE's first interval."""
SCHEMA = pa.schema([("pe", pa.int32()), ("t_first", pa.int64()), ("t_last", pa.int64()), ("span_ns", pa.int64()),
                    ("busy_ns", pa.int64()), ("idle_ns", pa.int64()), ("other_ns", pa.int64()),
                    ("busy_rows", pa.int64()), ("idle_rows", pa.int64())])


class Unordered(Exception):
    """The rows came out of (pe, t0) order."""


class _Sweep:
    """The running state over one stream of rows: per PE, busy and covered (busy ∪ idle) time."""

    def __init__(self) -> None:
        self.last = (None, NONE)  # (pe, t0) of the last row seen
        self.max_busy = self.max_any = NONE  # running maximum ends on the current PE
        self.totals: dict[int, list[int]] = {}  # pe -> [busy_ns, covered_ns, busy_rows, idle_rows]

    def batch(self, pe: np.ndarray, t0: np.ndarray, t1: np.ndarray, busy: np.ndarray | None) -> None:
        """`busy` None: every row is a running interval."""
        if not len(pe):
            return
        first, last = int(pe[0]), int(pe[-1])
        lp, lt = self.last
        if lp is not None and (first < lp or (first == lp and t0[0] < lt)):
            raise Unordered
        if first == last and bool((pe == first).all()):  # one PE (the format's files hold one each)
            if len(t0) > 1 and not bool((t0[1:] >= t0[:-1]).all()):
                raise Unordered
            self._segment(first, t0, t1, busy)
        else:
            self._check_order(pe, t0)
            cuts = np.flatnonzero(pe[1:] != pe[:-1]) + 1
            for s, e in zip(np.r_[0, cuts], np.r_[cuts, len(pe)]):
                self._segment(int(pe[s]), t0[s:e], t1[s:e], None if busy is None else busy[s:e])
        self.last = (last, int(t0[-1]))

    def _check_order(self, pe: np.ndarray, t0: np.ndarray) -> None:
        """Raises Unordered unless (pe, t0) never decreases within the batch."""
        dp, dt = np.diff(pe), np.diff(t0)
        if (dp < 0).any() or ((dp == 0) & (dt < 0)).any():
            raise Unordered

    def _segment(self, pe: int, t0: np.ndarray, t1: np.ndarray, busy: np.ndarray | None) -> None:
        """Rows of one PE: each adds the part of it that ends after its PE's earlier intervals."""
        if pe != self.last[0]:
            self.max_busy = self.max_any = NONE
            self.last = (pe, NONE)
        n_busy = len(t1) if busy is None else int(np.count_nonzero(busy))
        covered, top = _added(t0, t1, self.max_any)
        if n_busy == len(t1) and self.max_busy == self.max_any:  # no idle row yet: one sweep is both
            added = covered
            self.max_busy = top
        else:  # an idle row ends at its start for the busy sweep: it adds nothing and, the rows being
            # in t0 order, moves no later row's start
            added, self.max_busy = _added(t0, t1 if busy is None else np.where(busy, t1, t0), self.max_busy)
        self.max_any = top
        tot = self.totals.setdefault(pe, [0, 0, 0, 0])
        tot[0] += added
        tot[1] += covered
        tot[2] += n_busy
        tot[3] += len(t1) - n_busy


def _added(t0: np.ndarray, t1: np.ndarray, before: int) -> tuple[int, int]:
    """For rows in t0 order after intervals ending at most at `before`: the sum of each row's part
    past the running maximum end (max(0, t1 - max(t0, that maximum))), and the new maximum end."""
    run = np.empty(len(t1), np.int64)
    run[0] = before
    run[1:] = t1[:-1]
    np.maximum.accumulate(run, out=run)
    top = max(int(run[-1]), int(t1[-1]))
    np.maximum(run, t0, out=run)
    np.subtract(t1, run, out=run)
    np.maximum(run, 0, out=run)
    return int(run.sum()), top


def _swept(engine: Any, intervals: str) -> dict[int, list[int]]:
    sweep = _Sweep()
    for b in engine.batches(QUERY, intervals=intervals):
        pe = b.column(0)
        keep = validity(pe) if pe.null_count else None  # a row without a PE belongs to no PE's accounting
        cols = [_values(b.column(i)) for i in range(3)]
        flags = b.column(3)
        busy = None if flags.null_count == 0 and flags.true_count == len(flags) else _values(flags)
        if keep is not None:
            cols = [c[keep] for c in cols]
            busy = None if busy is None else busy[keep]
        sweep.batch(*cols, busy)
    return sweep.totals


def _values(col: pa.Array) -> np.ndarray:
    """A primitive column as numpy, by its buffers (Array.to_numpy would import pandas)."""
    return to_numpy(col, col.type.to_pandas_dtype())


def spans(groups: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per PE (ascending) its first start and last end, from overview_pe's rows (t_first, t_last
    per group); rows without a PE are left out."""
    cols = [groups.column(c).combine_chunks() for c in ("pe", "t_first", "t_last")]
    keep = validity(cols[0]) & validity(cols[1]) & validity(cols[2])
    pe, t_first, t_last = (_values(c)[keep].astype(np.int64) for c in cols)
    order = np.argsort(pe, kind="stable")
    pe, t_first, t_last = pe[order], t_first[order], t_last[order]
    starts = np.flatnonzero(np.r_[True, pe[1:] != pe[:-1]]) if len(pe) else np.zeros(0, np.intp)
    return (pe[starts], np.minimum.reduceat(t_first, starts) if len(pe) else t_first,
            np.maximum.reduceat(t_last, starts) if len(pe) else t_last)


def pe_time(engine: Any, groups: pa.Table | None = None) -> pa.Table:
    """One row per PE with any row: span, busy, idle and other time and the interval counts.
    `groups` is overview_pe's result (queried here when not given). The sweep reads the rows in the
    trace's row order; when they are not in the format's order it reads them again sorted."""
    try:
        totals = _swept(engine, "intervals")
    except Unordered:  # read again sorted, once the first stream (held by the traceback) is gone
        totals = None
    if totals is None:
        totals = _swept(engine, "intervals_by_time")
    pes, first, last = spans(groups if groups is not None else engine.query("overview_pe"))
    t = np.array([totals.get(int(p), [0, 0, 0, 0]) for p in pes], np.int64).reshape(len(pes), 4)
    busy, covered = t[:, 0], t[:, 1]
    cols = [pes.astype(np.int32), first, last, last - first, busy, covered - busy, last - first - covered,
            t[:, 2], t[:, 3]]
    return pa.Table.from_arrays([from_numpy(np.ascontiguousarray(c)) for c in cols], schema=SCHEMA)
