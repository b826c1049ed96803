"""Prototype (run 22, not shipped): overview_pe (every aggregate of the overview) and each PE's busy
sweep (paradise.engines.busy) from ONE DuckDB stream of the trace's rows (bench/sql/overview_rows.sql,
the string keys packed by DuckDB into one integer label from their positions in the lists of
bench/sql/overview_keys.sql): the time columns decoded once, the groups summed in numpy over dense
codes of their keys, the sweep on the same arrays. Same rows as paradise/sql/overview_pe.sql on the
bench's traces, but no cheaper (docs/benchmarks.md run 22). The full version wired into paradise
(session, compare, tests, oracle) is on branch firstpass-overview-pass."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from paradise.engines import busy  # noqa: E402
from paradise.format.arrays import from_numpy, strings, to_numpy, validity

SQL = Path(__file__).resolve().parent / "sql"
STRING_KEYS = ("kind", "name", "coll", "cat")
"""overview_pe's string keys: the stream hands each over as its position in the list of its values."""
RUNNING = ("exec", "piece", "phase")
"""Kinds of the running intervals (events_running.sql; `idle` rows are the other intervals)."""
SCHEMA = pa.schema([
    ("kind", pa.string()), ("pe", pa.int32()), ("name", pa.string()), ("coll", pa.string()), ("cat", pa.string()),
    ("peer_pe", pa.int32()), ("size_log2", pa.int32()), ("rows", pa.int64()), ("t_first", pa.int64()),
    ("t_last", pa.int64()), ("dur_ns", pa.int64()), ("max_ns", pa.int64()), ("bytes", pa.int64()),
    ("min_bytes", pa.int64()), ("max_bytes", pa.int64())])
"""overview_pe's rows: the columns and grain tests/oracles/sql/overview_pe.sql states."""
I64 = np.iinfo(np.int64)
LUT_MAX = 1 << 22
"""Labels (overview_rows) numbered through a lookup table when there are at most this many possible (32 MiB)."""
LOG2_CODES = 64
"""floor(log2(max(bytes, 1))) of an int64 is 0..63: a send row's code is peer * 64 + that, plus 1 (0: no send row)."""


def _ints(col: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """An integer column's values (its own width, read in place) and where it holds a value (None: everywhere)."""
    return to_numpy(col, col.type.to_pandas_dtype()), (validity(col) if col.null_count else None)


def _at(col: pa.Array, at: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """_ints of the rows `at`, as int64 (no Array.take: it imports pyarrow.compute)."""
    v, ok = _ints(col)
    return v[at].astype(np.int64), (None if ok is None else ok[at])


def _range(v: np.ndarray, ok: np.ndarray | None) -> tuple[int, int]:
    """The least and greatest value held (0, -1 when none)."""
    if ok is not None:
        v = v[ok]
    return (int(v.min()), int(v.max())) if len(v) else (0, -1)


class _Groups:
    """overview_pe's aggregates, summed batch by batch into one row per key (a dict of a few hundred
    keys). A row's key is its label (kind, name, coll, cat: overview_rows), numbered densely as
    labels appear, times its PE, and on send rows (peer_pe, size_log2) appended."""

    def __init__(self, values: dict[str, list[str]]) -> None:
        self.values = values
        self.words = [[None] + values[c] for c in STRING_KEYS]  # code -> value, per string key
        labels = int(np.prod([len(w) for w in self.words], dtype=np.float64))
        self.lut = np.full(labels, -1, np.int64) if labels <= LUT_MAX else None  # label -> dense number
        self.known: dict[int, int] = {}  # the same, without a lookup table (a huge label space)
        self.labels: list[int] = []  # dense number -> label
        self.rows: dict[tuple, list] = {}  # key -> [rows, t_first, t_last, dur, max, bytes, min_b, max_b]
        self.send = self.words[0].index("send") if "send" in values["kind"] else -1
        self.exec = self.words[0].index("exec") if "exec" in values["kind"] else -1

    def add(self, c: dict[str, pa.Array], kind: np.ndarray, t0: np.ndarray, t1: np.ndarray,
            t1_ok: np.ndarray | None) -> None:
        end = t1 if t1_ok is None else np.where(t1_ok, t1, t0)
        d, d_ok = self._durations(c["active"], kind, t0, t1_ok, end)
        key, decode = self._keys(c, kind)
        size = int(key.max()) + 1
        rows = np.bincount(key, minlength=size)
        t_first = np.full(size, I64.max)
        np.minimum.at(t_first, key, t0)
        t_last = np.full(size, I64.min)
        np.maximum.at(t_last, key, end)
        dk, dv = (key, d) if d_ok is None else (key[d_ok], d[d_ok])
        dur = np.zeros(size, np.int64)
        np.add.at(dur, dk, dv)
        d_rows = rows if d_ok is None else np.bincount(dk, minlength=size)
        d_max = np.full(size, I64.min)
        np.maximum.at(d_max, dk, dv)
        b_sum, b_rows, b_min, b_max = self._bytes(c["bytes"], key, size)
        for k in np.flatnonzero(rows).tolist():
            has_d, has_b = bool(d_rows[k]), bool(b_rows[k])
            self._merge(decode(k), [int(rows[k]), int(t_first[k]), int(t_last[k]),
                                    int(dur[k]) if has_d else None, int(d_max[k]) if has_d else None,
                                    int(b_sum[k]) if has_b else None, int(b_min[k]) if has_b else None,
                                    int(b_max[k]) if has_b else None])

    def _dense(self, label: np.ndarray) -> np.ndarray:
        """Each label's number in the order labels first appeared in the stream."""
        if self.lut is None:
            uniq, inv = np.unique(label, return_inverse=True)
            ids = []
            for u in uniq.tolist():
                if u not in self.known:
                    self.known[u] = len(self.labels)
                    self.labels.append(u)
                ids.append(self.known[u])
            return np.array(ids, np.int64)[inv]
        dense = self.lut[label]
        if bool((dense < 0).any()):
            new = np.unique(label[dense < 0])
            self.lut[new] = np.arange(len(self.labels), len(self.labels) + len(new))
            self.labels += new.tolist()
            dense = self.lut[label]
        return dense

    def _keys(self, c: dict[str, pa.Array], kind: np.ndarray) -> tuple[np.ndarray, Any]:
        """Dense codes of the rows' full keys, and the function from a code back to the key's values."""
        label, _ = _ints(c["label"])
        key = self._dense(label)
        pe, pe_ok = _ints(c["pe"])
        lo, hi = _range(pe, pe_ok)
        n_pe = hi - lo + 2  # the last code: no PE
        key *= n_pe
        key += pe - lo if pe_ok is None else np.where(pe_ok, pe - lo, n_pe - 1)
        at = np.flatnonzero(kind == self.send) if self.send >= 0 else np.zeros(0, np.intp)
        p_lo = p_hi = 0
        sub = 0
        if len(at):  # send rows: (peer_pe, size_log2) appended
            peer, peer_ok = _at(c["peer_pe"], at)
            p_lo, p_hi = _range(peer, peer_ok)
            peer_code = peer - p_lo if peer_ok is None else np.where(peer_ok, peer - p_lo, p_hi - p_lo + 1)
            b, b_ok = _at(c["bytes"], at)
            b = np.maximum(b if b_ok is None else np.where(b_ok, b, 0), 1)
            log2 = np.frexp(b.astype(np.float64))[1] - 1  # floor(log2(b)), b >= 1
            sub = (p_hi - p_lo + 2) * LOG2_CODES
            key *= sub + 1
            key[at] += peer_code * LOG2_CODES + log2 + 1
        uniq = None
        if int(key.max()) > 4 * len(key) + 1024:  # a sparse key space: numbered by a sort instead
            uniq, key = np.unique(key, return_inverse=True)
        sizes = [len(w) for w in self.words]

        def decode(k: int) -> tuple:
            if uniq is not None:
                k = int(uniq[k])
            k, s = divmod(k, sub + 1)
            g, p = divmod(k, n_pe)
            label = self.labels[g]
            out = []
            for size, words in zip(reversed(sizes), reversed(self.words)):
                label, i = divmod(label, size)
                out.append(words[i])
            kind_, name, coll, cat = reversed(out)
            pe_ = None if p == n_pe - 1 else p + lo
            if not s:
                return (kind_, pe_, name, coll, cat, None, None)
            q, lg = divmod(s - 1, LOG2_CODES)
            return (kind_, pe_, name, coll, cat, None if q == p_hi - p_lo + 1 else q + p_lo, lg)

        return key, decode

    def _durations(self, a: pa.Array, kind: np.ndarray, t0: np.ndarray, t1_ok: np.ndarray | None,
                   end: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Each row's time (exec rows: coalesce(active, t1 - t0), null when neither; others
        coalesce(t1, t0) - t0) and where it is known (None: everywhere)."""
        d = end - t0
        if self.exec < 0 or (a.null_count == len(a) and t1_ok is None):
            return d, None
        ex = kind == self.exec
        a_ok = np.zeros(len(t0), bool)
        if a.null_count < len(a):
            av, ok = _ints(a)
            a_ok = ex if ok is None else ex & ok
            d = np.where(a_ok, av, d)
        return d, (None if t1_ok is None else ~(ex & ~a_ok & ~t1_ok))

    @staticmethod
    def _bytes(col: pa.Array, key: np.ndarray, size: int) -> tuple[np.ndarray, ...]:
        """Per key: sum, count, min and max of bytes over the rows that have bytes."""
        zero = np.zeros(size, np.int64)
        if col.null_count == len(col):
            return zero, zero, zero, zero
        v, ok = _ints(col)
        if ok is not None:
            at = np.flatnonzero(ok)
            key, v = key[at], v[at]
        s = np.zeros(size, np.int64)
        np.add.at(s, key, v)
        lo = np.full(size, I64.max)
        np.minimum.at(lo, key, v)
        hi = np.full(size, I64.min)
        np.maximum.at(hi, key, v)
        return s, np.bincount(key, minlength=size), lo, hi

    def _merge(self, key: tuple, new: list) -> None:
        """overview_pe's merge rule: sum(rows, dur_ns, bytes) min(t_first, min_bytes) max(t_last, max_ns, max_bytes)."""
        cur = self.rows.get(key)
        if cur is None:
            self.rows[key] = new
            return
        for i, f in ((0, sum), (1, min), (2, max), (3, sum), (4, max), (5, sum), (6, min), (7, max)):
            a, b = cur[i], new[i]
            cur[i] = b if a is None else a if b is None else f((a, b))

    def table(self) -> pa.Table:
        """The groups sorted by their keys, nulls first (as the SQL's ORDER BY ... NULLS FIRST)."""
        keys = sorted(self.rows, key=lambda k: tuple((v is not None, v if v is not None else 0) for v in k))
        cols = []
        for i, f in enumerate(SCHEMA):
            if i < 7:
                vals = [k[i] for k in keys]
            else:
                vals = [self.rows[k][i - 7] for k in keys]
            if f.type == pa.string():
                cols.append(strings(vals))
            else:
                ok = np.array([v is not None for v in vals], bool)
                arr = np.array([0 if v is None else v for v in vals], np.int64)
                cols.append(from_numpy(arr.astype(np.int32) if f.type == pa.int32() else arr, ok))
        return pa.Table.from_arrays(cols, schema=SCHEMA)


class _BusyRows:
    """The busy sweep fed with every row of the stream: a row that is no interval goes in as a running
    row of length 0 at its start, which adds nothing to either union and, each PE's rows being in t0
    order, moves no later row's start (no compress of the interval rows); those rows are taken off
    busy_rows at the end. `Unordered` from the sweep means the rows are not in the format's order."""

    def __init__(self, kinds: list[str]) -> None:
        self.sweep = busy._Sweep()
        self.flag = np.array([-1] + [1 if k in RUNNING else 0 if k == "idle" else -1 for k in kinds], np.int8)
        self.neutral: dict[int, int] = {}

    def add(self, pe_col: pa.Array, kind: np.ndarray, t0: np.ndarray, t1: np.ndarray,
            t1_ok: np.ndarray | None) -> None:
        pe, pe_ok = _ints(pe_col)
        flag = self.flag[kind]
        inter = flag >= 0 if t1_ok is None else (flag >= 0) & t1_ok
        if pe_ok is not None:  # a row without a PE belongs to no PE's accounting
            pe, t0, t1, flag, inter = pe[pe_ok], t0[pe_ok], t1[pe_ok], flag[pe_ok], inter[pe_ok]
        if not len(pe):
            return
        n_other = len(inter) - int(np.count_nonzero(inter))
        running = flag == 1 if not n_other else (flag == 1) | ~inter  # every row that is no interval: running, of length 0
        self.sweep.batch(pe, t0, t1 if not n_other else np.where(inter, t1, t0), None if running.all() else running)
        if n_other:
            if pe[0] == pe[-1] and bool((pe == pe[0]).all()):
                self.neutral[int(pe[0])] = self.neutral.get(int(pe[0]), 0) + n_other
            else:
                others = pe[~inter]
                lo = int(others.min())
                counts = np.bincount(others - lo)
                for i in np.flatnonzero(counts).tolist():
                    self.neutral[i + lo] = self.neutral.get(i + lo, 0) + int(counts[i])

    def totals(self) -> dict[int, list[int]]:
        """busy.pe_time's totals: per PE [busy_ns, covered_ns, busy_rows, idle_rows], PEs with an interval."""
        out = {}
        for p, (b, cov, nb, ni) in self.sweep.totals.items():
            t = [b, cov, nb - self.neutral.get(p, 0), ni]
            if any(t):
                out[p] = t
        return out


def key_values(engine: Any) -> dict[str, list[str]]:
    """Each string key's distinct values (nulls left out), sorted: the lists the stream codes by."""
    t = engine.sql((SQL / "overview_keys.sql").read_text())
    return {c: sorted(v for v in t.column(c).to_pylist()[0] if v is not None) for c in STRING_KEYS}


def one_stream(engine: Any) -> tuple[pa.Table, dict[int, list[int]] | None]:
    """overview_pe's groups and the busy sweep's totals (busy._swept's form) from one stream of
    overview_rows on the DuckDB engine's connection; totals None when the sweep could not take the
    rows as they came (pieces, rows out of the format's order)."""
    values = key_values(engine)
    groups = _Groups(values)
    swept = None if engine.trace.may_hold_pieces else _BusyRows(values["kind"])
    params = {c + "s": values[c] for c in STRING_KEYS}
    reader = engine.con.cursor().sql((SQL / "overview_rows.sql").read_text(), params=params).to_arrow_reader(
        batch_size=1 << 20)
    for b in reader:
        if not b.num_rows:
            continue
        c = dict(zip(b.schema.names, b.columns))
        kind, _ = _ints(c["kind"])
        t0, _ = _ints(c["t0"])
        t1, t1_ok = _ints(c["t1"])
        groups.add(c, kind, t0, t1, t1_ok)
        if swept is not None:
            try:
                swept.add(c["pe"], kind, t0, t1, t1_ok)
            except busy.Unordered:
                swept = None
    return groups.table(), (swept.totals() if swept is not None else None)
