"""Does the first report (`analyze --only overview`) get cheaper from one read of the trace instead of two?

The first report needs overview_pe (a DuckDB hash aggregate over one scan) and each PE's busy time
(paradise.engines.busy: a numpy sweep over the running and idle rows in the format's row order, a
second scan streamed to Arrow). This runs, on one trace, in one process, side by side and twice
each, the shipped design and the one-read designs that could replace it, and checks that each
gives the same overview_pe rows and busy totals:
  * two reads:     engine.query("overview_pe") and busy._swept(engine, "intervals") (shipped; label `two reads (main)`),
  * duckdb tee:    one DuckDB stream of every column overview_pe reads; each batch is swept in numpy
                   and handed to a second DuckDB connection that runs overview_pe's SQL over the stream,
  * pyarrow tee:   the same, the files read by pyarrow (dictionary columns kept as dictionaries),
  * windows:       one DuckDB query, overview_pe's aggregate plus the sweep as streaming windows
                   (running maximum end per PE as HUGEINT pe << 64 | end, and lag), no Python pass,
  * numpy one pass: each row group read once by pyarrow (columns its footer says hold no value skipped,
                   string keys as dictionary codes), overview_pe's aggregate in numpy (bincount,
                   ufunc.at) and the sweep over the same arrays: no second engine (run 21),
  * one stream (packed labels): one DuckDB stream of the events view (corrections applied there),
                   the string keys packed by DuckDB into one integer label (positions in lists of
                   their values), overview_pe's aggregate in numpy and the sweep on the same arrays
                   (bench/overview_pass_proto.py, run 22).
`--cli` runs instead the first report itself as shipped and with the one pass installed in the
session (fresh interpreters, --json compared), beside bench/scale.py's scan; `--columns` prints each
column's bytes and read CPU in pyarrow and DuckDB first.
CPU seconds are the process's (getrusage, every thread); wall beside them.

Run: flock /tmp/paradise-bench.lock nice -n 5 .venv/bin/python bench/first_report_reads.py TRACE_DIR
     [--designs 'two reads (main),overview pass (branch)'] [--rounds 2] [--columns | --cli]
(a trace without clock corrections or pieces, e.g. `paradise synth --kind torch --events 1e7`).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import overview_pass_proto  # noqa: E402  (bench/, beside this file)

from paradise.engines import busy  # noqa: E402
from paradise.engines.duckdb_engine import DuckDBEngine  # noqa: E402
from paradise.store import open_trace  # noqa: E402

OVERVIEW_SQL = (ROOT / "paradise" / "sql" / "overview_pe.sql").read_text()
"""overview_pe in SQL: the DuckDB hash aggregate the first report runs."""
COLUMNS = ["kind", "pe", "t0", "t1", "active", "name", "coll", "cat", "peer_pe", "bytes"]
"""Every column overview_pe and the sweep read."""
RUNNING = ("exec", "piece", "phase")
"""Kinds of the running intervals (events_running.sql; `idle` rows are the other intervals)."""
Totals = dict[int, list[int]]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def sweep_batch(sweep: busy._Sweep, b: pa.RecordBatch) -> None:
    """The interval rows of a batch of events (kind as strings or a dictionary) into the sweep."""
    kind = b.column(0)
    if isinstance(kind.type, pa.DictionaryType):
        words = kind.dictionary.to_pylist()
        codes = busy._values(kind.indices)
    else:
        enc = kind.dictionary_encode()
        words, codes = enc.dictionary.to_pylist(), busy._values(enc.indices)
    flag = np.array([1 if w in RUNNING else 0 if w == "idle" else -1 for w in words], np.int8)[codes]
    t1 = b.column(3)
    keep = (flag >= 0) & busy.validity(t1)
    sweep.batch(busy._values(b.column(1))[keep], busy._values(b.column(2))[keep], busy._values(t1)[keep],
                flag[keep] == 1)


def aggregate_stream(batches: Iterator[pa.RecordBatch], schema: pa.Schema, sweep: busy._Sweep) -> pa.Table:
    """overview_pe's SQL over the batches in a second DuckDB connection, each batch swept on its way."""
    def tee() -> Iterator[pa.RecordBatch]:
        for b in batches:
            sweep_batch(sweep, b)
            yield b

    con = duckdb.connect()
    try:
        con.register("events", pa.RecordBatchReader.from_batches(schema, tee()))
        return con.sql(OVERVIEW_SQL).to_arrow_table()
    finally:
        con.close()


def two_reads(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    return eng.sql(OVERVIEW_SQL), busy._swept(eng, "intervals")


def duckdb_tee(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    sweep = busy._Sweep()
    reader = eng.con.cursor().sql(f"SELECT {', '.join(COLUMNS)} FROM events").to_arrow_reader(batch_size=1 << 20)
    return aggregate_stream(iter(reader), reader.schema, sweep), sweep.totals


def pyarrow_tee(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    sweep = busy._Sweep()
    schema = pq.ParquetFile(files[0]).schema_arrow
    schema = pa.schema([schema.field(c) for c in COLUMNS])

    def batches() -> Iterator[pa.RecordBatch]:
        for f in files:
            pf = pq.ParquetFile(f)
            for i in range(pf.num_row_groups):
                yield from pf.read_row_group(i, columns=COLUMNS, use_threads=False).to_batches()

    return aggregate_stream(batches(), schema, sweep), sweep.totals


def _running_max(expr: str) -> str:
    return f"max({expr}) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"


def windows(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    pack = "pe::HUGEINT * 18446744073709551616::HUGEINT + ({t}::HUGEINT + 9223372036854775808::HUGEINT)"
    unpack = ("CASE WHEN ({c} >> 64)::INTEGER = pe THEN (({c} & 18446744073709551615::HUGEINT)"
              " - 9223372036854775808::HUGEINT)::BIGINT END")
    iv = "CASE WHEN kind IN ('exec', 'piece', 'phase', 'idle') AND t1 IS NOT NULL THEN kind <> 'idle' END"
    part = "greatest(0, t1 - greatest(t0, coalesce({p}, t0)))"
    body = OVERVIEW_SQL.split("SELECT", 1)[1].split("FROM events")[0]
    text = f"""
    WITH r AS (SELECT *, {iv} AS iv FROM events),
    m AS (SELECT *, {_running_max(f"CASE WHEN iv IS NOT NULL THEN {pack.format(t='t1')} END")} AS m_any,
                    {_running_max(f"CASE WHEN iv THEN {pack.format(t='t1')} END")} AS m_busy FROM r),
    l AS (SELECT *, lag(m_any) OVER () AS p_any, lag(m_busy) OVER () AS p_busy FROM m),
    c AS (SELECT *, CASE WHEN iv IS NOT NULL THEN {part.format(p=unpack.format(c='p_any'))} END AS cover_add,
                    CASE WHEN iv THEN {part.format(p=unpack.format(c='p_busy'))} END AS busy_add FROM l)
    SELECT {body}, sum(busy_add)::BIGINT AS busy_ns, sum(cover_add)::BIGINT AS covered_ns,
           count(*) FILTER (WHERE iv) AS busy_rows, count(*) FILTER (WHERE NOT iv) AS idle_rows
    FROM c GROUP BY ALL ORDER BY ALL NULLS FIRST"""
    t = eng.con.cursor().sql(text).to_arrow_table()
    per_pe = duckdb.sql("SELECT pe, sum(busy_ns), sum(covered_ns), sum(busy_rows), sum(idle_rows) FROM t "
                        "WHERE pe IS NOT NULL GROUP BY pe").fetchall()
    totals = {int(p): [int(b), int(c), int(nb), int(ni)] for p, b, c, nb, ni in per_pe if nb or ni}
    return t.drop_columns(["busy_ns", "covered_ns", "busy_rows", "idle_rows"]), totals


ONE_PASS_STRINGS = ("kind", "name", "coll", "cat")
"""overview_pe's string keys, read as the files' dictionaries (codes, never strings)."""
I64 = np.iinfo(np.int64)


def _null_columns(meta: pq.RowGroupMetaData) -> set[str]:
    """Columns whose footer statistics say every value of the row group is null: never read."""
    out = set()
    for i in range(meta.num_columns):
        c = meta.column(i)
        s = c.statistics
        if s is not None and s.has_null_count and s.null_count == meta.num_rows:
            out.add(c.path_in_schema)
    return out


def _codes(col: pa.Array | None) -> tuple[np.ndarray | None, list]:
    """A dictionary column's codes (null: the last code) and the values they name (None last)."""
    if col is None:
        return None, [None]
    words = col.dictionary.to_pylist()
    idx = busy._values(col.indices)
    if col.null_count:
        idx = np.where(busy.validity(col), idx, len(words))
    return idx, words + [None]


class OnePass:
    """overview_pe's groups and the busy sweep from one pyarrow read of each row group (footer
    statistics skip the columns a row group holds no value of), the aggregate in numpy."""

    def __init__(self) -> None:
        self.sweep = busy._Sweep()
        self.groups: dict[tuple, list] = {}
        self.neutral: dict[int, int] = {}  # pe -> rows swept as running rows of length 0

    def file(self, path: str) -> None:
        pf = pq.ParquetFile(path, read_dictionary=list(ONE_PASS_STRINGS))
        have = set(pf.schema_arrow.names)
        for i in range(pf.num_row_groups):
            skip = _null_columns(pf.metadata.row_group(i))
            cols = [c for c in COLUMNS if c in have and c not in skip]
            t = pf.read_row_group(i, columns=cols, use_threads=False)
            self.batch({c: t.column(c).chunk(0) if t.column(c).num_chunks == 1 else t.column(c).combine_chunks()
                        for c in cols}, t.num_rows)

    def batch(self, t: dict[str, pa.Array], n: int) -> None:
        kc, kv = _codes(t.get("kind"))
        pe = busy._values(t["pe"])  # the format's pe is never null in these traces
        t0 = busy._values(t["t0"])
        t1a = t.get("t1")
        t1 = busy._values(t1a) if t1a is not None else t0
        t1_ok = None if t1a is None or not t1a.null_count else busy.validity(t1a)
        if t1a is None:
            t1_ok = np.zeros(n, bool)
        end = t1 if t1_ok is None else np.where(t1_ok, t1, t0)
        d = end - t0
        d_ok = None
        exec_code = kv.index("exec") if "exec" in kv else -1
        if t1_ok is not None or "active" in t:  # exec rows: coalesce(active, t1 - t0), null when neither
            ex = kc == exec_code
            if "active" in t:
                a = t["active"]
                a_ok = busy.validity(a) if a.null_count else np.ones(n, bool)
                d = np.where(ex & a_ok, busy._values(a), d)
            else:
                a_ok = np.zeros(n, bool)
            if t1_ok is not None:
                d_ok = ~(ex & ~a_ok & ~t1_ok)
        # the group key: kind, pe, name, coll, cat, and on send rows peer_pe and size_log2
        key = kc.astype(np.int64)
        sizes, vals = [len(kv)], [kv]
        plo, phi = int(pe.min()), int(pe.max())
        if phi > plo:
            key *= phi - plo + 1
            key += pe - plo
        sizes.append(phi - plo + 1)
        vals.append(list(range(plo, phi + 1)))
        for c in ("name", "coll", "cat"):
            cc, cv = _codes(t.get(c))
            if len(cv) > 1:
                key *= len(cv)
                key += cc
            sizes.append(len(cv))
            vals.append(cv)
        b = t.get("bytes")
        send_code = kv.index("send") if "send" in kv else -1
        base = int(np.prod(sizes, dtype=np.int64))
        present, S = None, 1
        if send_code >= 0:  # send rows: the key goes on with (peer_pe, size_log2), over the send rows only
            at = np.flatnonzero(kc == send_code)
            pp = t.get("peer_pe")
            pv = busy._values(pp)[at] if pp is not None else np.zeros(len(at), np.int64)
            lo, hi = (int(pv.min()), int(pv.max())) if len(at) and pp is not None else (0, -1)
            pv = pv - lo
            if pp is not None and pp.null_count:
                pv = np.where(busy.validity(pp)[at], pv, hi - lo + 1)
            bv = busy._values(b)[at] if b is not None else np.zeros(len(at), np.int64)
            if b is not None and b.null_count:
                bv = np.where(busy.validity(b)[at], bv, 0)
            lg = np.floor(np.log2(np.maximum(bv, 1))).astype(np.int64)
            llo = int(lg.min()) if len(at) else 0
            L = (int(lg.max()) - llo + 1) if len(at) else 1
            S = (hi - lo + 2) * L + 1
            cnt = np.bincount(key, minlength=base)  # the base keys present, numbered densely
            present = np.flatnonzero(cnt)
            dense = np.zeros(base, np.int64)
            dense[present] = np.arange(len(present))
            key = dense[key]
            key *= S
            key[at] += pv * L + (lg - llo) + 1
            K = len(present) * S
        else:
            K = base
        inv = None
        if K > 4 * n + 1024:
            uk, key = np.unique(key, return_inverse=True)
            inv, K = uk, len(uk)
        rows = np.bincount(key, minlength=K)
        w = d if d_ok is None else np.where(d_ok, d, 0)
        dur = np.bincount(key, weights=w, minlength=K)
        nd = rows if d_ok is None else np.bincount(key, weights=d_ok, minlength=K)
        tf = np.full(K, I64.max)
        np.minimum.at(tf, key, t0)
        tl = np.full(K, I64.min)
        np.maximum.at(tl, key, end)
        mx = np.full(K, I64.min)
        np.maximum.at(mx, key, d if d_ok is None else np.where(d_ok, d, I64.min))
        if b is not None:  # the rows with bytes only (a small share: sends, collectives)
            at = np.flatnonzero(busy.validity(b)) if b.null_count else np.arange(n)
            bk, bv = key[at], busy._values(b)[at]
            bs = np.bincount(bk, weights=bv, minlength=K)
            bn = np.bincount(bk, minlength=K)
            bmin = np.full(K, I64.max)
            np.minimum.at(bmin, bk, bv)
            bmax = np.full(K, I64.min)
            np.maximum.at(bmax, bk, bv)
        for k in np.flatnonzero(rows):
            kk = int(k) if inv is None else int(inv[k])
            sub = 0
            if present is not None:
                kk, sub = divmod(kk, S)
                kk = int(present[kk])
            parts = []
            for sz, v in zip(reversed(sizes), reversed(vals)):
                parts.append(v[kk % sz])
                kk //= sz
            g = parts[::-1]
            if sub:
                pv_, lg_ = divmod(sub - 1, L)
                g += [None if pv_ == hi - lo + 1 else pv_ + lo, lg_ + llo]
            else:
                g += [None, None]
            has_d = int(nd[k]) > 0
            new = [int(rows[k]), int(tf[k]), int(tl[k]), int(dur[k]) if has_d else None, int(mx[k]) if has_d else None]
            if b is not None and int(bn[k]):
                new += [int(bs[k]), int(bmin[k]), int(bmax[k])]
            else:
                new += [None, None, None]
            self._merge(tuple(g), new)
        # the sweep reads every row: a row that is no interval (or has no end) goes in as a running row
        # of length 0 at its start, which adds nothing to either union and, the rows being in t0
        # order, moves no later row's start; its count is taken off busy_rows at the end
        flag = np.array([1 if w_ in RUNNING else 0 if w_ == "idle" else -1 for w_ in kv], np.int8)[kc]
        inter = flag >= 0
        if t1_ok is not None:
            inter &= t1_ok
        n_other = n - int(np.count_nonzero(inter))
        t1e = t1 if not n_other else np.where(inter, t1, t0)
        running = flag != 0
        self.sweep.batch(pe, t0, t1e, None if running.all() else running)
        if n_other:
            if phi == plo:
                self.neutral[plo] = self.neutral.get(plo, 0) + n_other
            else:
                for p_, c_ in zip(*np.unique(pe[~inter], return_counts=True)):
                    self.neutral[int(p_)] = self.neutral.get(int(p_), 0) + int(c_)

    def totals(self) -> Totals:
        """The sweep's totals less the rows of length 0 it was given (rows that are no interval)."""
        out = {}
        for p_, t_ in self.sweep.totals.items():
            t_ = [t_[0], t_[1], t_[2] - self.neutral.get(p_, 0), t_[3]]
            if any(t_):
                out[p_] = t_
        return out

    def _merge(self, g: tuple, new: list) -> None:
        cur = self.groups.get(g)
        if cur is None:
            self.groups[g] = new
            return
        add = lambda a, b: b if a is None else a if b is None else a + b  # noqa: E731
        pick = lambda f, a, b: b if a is None else a if b is None else f(a, b)  # noqa: E731
        cur[0] += new[0]
        cur[1], cur[2] = min(cur[1], new[1]), max(cur[2], new[2])
        cur[3], cur[4] = add(cur[3], new[3]), pick(max, cur[4], new[4])
        cur[5], cur[6], cur[7] = add(cur[5], new[5]), pick(min, cur[6], new[6]), pick(max, cur[7], new[7])

    def table(self) -> pa.Table:
        names = ["kind", "pe", "name", "coll", "cat", "peer_pe", "size_log2", "rows", "t_first", "t_last",
                 "dur_ns", "max_ns", "bytes", "min_bytes", "max_bytes"]
        rows = [dict(zip(names, list(g) + v)) for g, v in self.groups.items()]
        return pa.Table.from_pylist(rows)


def one_pass(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    p = OnePass()
    for f in files:
        p.file(f)
    return p.table(), p.totals()


STREAM_SQL = """SELECT (list_position($kind, kind) - 1)::INTEGER AS kind, pe, t0, t1, active,
       (list_position($name, name) - 1)::INTEGER AS name, (list_position($coll, coll) - 1)::INTEGER AS coll,
       (list_position($cat, cat) - 1)::INTEGER AS cat, peer_pe, bytes FROM events"""
"""One DuckDB stream of every column overview_pe and the sweep read, the string keys as their
positions in the lists of their distinct values (`stream_keys`)."""


def stream_keys(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Each string key's distinct values (nulls left out), one scan."""
    row = con.sql("SELECT list(DISTINCT kind), list(DISTINCT name), list(DISTINCT coll), list(DISTINCT cat) "
                  "FROM events").fetchall()[0]
    return {c: sorted(v) for c, v in zip(ONE_PASS_STRINGS, row)}


def one_stream_pass(con: duckdb.DuckDBPyConnection) -> OnePass:
    """OnePass's numpy aggregate and sweep over one DuckDB stream of the events view (clock
    corrections applied there), the string keys handed over as codes."""
    keys = stream_keys(con)
    dicts = {c: pa.array(v, pa.string()) for c, v in keys.items()}
    p = OnePass()
    reader = con.cursor().sql(STREAM_SQL, params=keys).to_arrow_reader(batch_size=1 << 20)
    for b in reader:
        t = {}
        for c in COLUMNS:
            a = b.column(c)
            if a.null_count == len(a) and c not in ("kind", "pe", "t0"):
                continue
            t[c] = pa.DictionaryArray.from_arrays(a, dicts[c]) if c in dicts else a
        p.batch(t, b.num_rows)
    return p


def duckdb_one_stream(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    p = one_stream_pass(eng.con)
    return p.table(), p.totals()


def branch_pass(eng: DuckDBEngine, files: list[str]) -> tuple[pa.Table, Totals]:
    """bench/overview_pass_proto.py: one DuckDB stream, string keys packed into a label, numpy aggregate (run 22)."""
    groups, totals = overview_pass_proto.one_stream(eng)
    return groups, totals


DESIGNS: dict[str, Callable[[DuckDBEngine, list[str]], tuple[pa.Table, Totals]]] = {
    "two reads (main)": two_reads, "duckdb tee": duckdb_tee, "pyarrow tee": pyarrow_tee, "windows": windows,
    "numpy one pass": one_pass, "duckdb one stream": duckdb_one_stream, "one stream (packed labels)": branch_pass,
}


def same_groups(a: pa.Table, b: pa.Table) -> bool:
    """The same rows, whatever their order and integer widths."""
    con = duckdb.connect()
    con.register("a", a)
    con.register("b", b.cast(a.schema))
    diff = con.sql("SELECT count(*) FROM ((FROM a EXCEPT ALL FROM b) UNION ALL (FROM b EXCEPT ALL FROM a))").fetchall()
    return a.num_rows == b.num_rows and diff[0][0] == 0


OVERVIEW_SCHEMA = pa.schema([
    ("kind", pa.string()), ("pe", pa.int32()), ("name", pa.string()), ("coll", pa.string()), ("cat", pa.string()),
    ("peer_pe", pa.int32()), ("size_log2", pa.int32()), ("rows", pa.int64()), ("t_first", pa.int64()),
    ("t_last", pa.int64()), ("dur_ns", pa.int64()), ("max_ns", pa.int64()), ("bytes", pa.int64()),
    ("min_bytes", pa.int64()), ("max_bytes", pa.int64())])
"""overview_pe's result as the DuckDB engine returns it."""


def install_one_pass(stream: bool = False) -> None:
    """Makes the session's `overview_groups` and `pe_time` come from one OnePass over the trace's
    files (for `--cli`: the first report as it would run with the pass shipped)."""
    import pyarrow.compute as pc

    from paradise.analyses import session as S

    done: dict[str, OnePass] = {}
    lock = __import__("threading").Lock()

    def run(s: S.Session) -> OnePass:
        with lock:
            if "p" not in done:
                assert not s.trace.corrections and not s.trace.may_hold_pieces
                if stream:
                    done["p"] = one_stream_pass(s.engine.con)
                    return done["p"]
                p = done["p"] = OnePass()
                for f in s.trace.files:
                    p.file(str(f))
            return done["p"]

    def groups(s: S.Session) -> pa.Table:
        t = run(s).table()
        t = pa.table({f.name: t.column(f.name).cast(f.type) for f in OVERVIEW_SCHEMA}, schema=OVERVIEW_SCHEMA)
        keys = [(c, "ascending") for c in ("kind", "pe", "name", "coll", "cat", "peer_pe", "size_log2")]
        return t.take(pc.sort_indices(t, sort_keys=keys, null_placement="at_start"))

    def pe_time(s: S.Session) -> pa.Table:  # paradise.engines.busy.pe_time's tail, on the pass's totals
        totals = run(s).totals()
        pes, first, last = busy.spans(s.get("overview_groups"))
        t = np.array([totals.get(int(p_), [0, 0, 0, 0]) for p_ in pes], np.int64).reshape(len(pes), 4)
        b, covered = t[:, 0], t[:, 1]
        cols = [pes.astype(np.int32), first, last, last - first, b, covered - b, last - first - covered,
                t[:, 2], t[:, 3]]
        return pa.Table.from_arrays([busy.from_numpy(np.ascontiguousarray(c)) for c in cols], schema=busy.SCHEMA)

    S.SHARED["overview_groups"] = groups
    S.SHARED["pe_time"] = pe_time


def first_reports(trace: Path, rounds: int, which: list[str], base: Path | None) -> None:
    """`paradise analyze --json --only overview` as shipped and with the one pass installed, each in
    a fresh interpreter (CPU of the child), their JSON compared; and the bench's scan for the ratio."""
    import json
    import subprocess

    sys.path.insert(0, str(ROOT / "bench"))
    import scale

    main = "import sys; from paradise.cli.main import main; sys.argv[0] = 'paradise'; sys.exit(main())"
    patched = (f"import sys; sys.path.insert(0, {str(ROOT / 'bench')!r}); import first_report_reads as F; "
               "F.install_one_pass(); " + main)
    cmds = {"scan": scale.scan_cmd(trace)}
    cwd = {}
    if base is not None:
        cmds["first (base)"] = [sys.executable, "-c", main, "analyze", "--json", "--only", "overview", str(trace)]
        cwd["first (base)"] = base
    streamed = patched.replace("F.install_one_pass()", "F.install_one_pass(stream=True)")
    for label, code in (("first (branch)", main), ("first (one pass)", patched), ("first (one stream)", streamed)):
        if label[7:-1] not in which:
            continue
        cmds[label] = [sys.executable, "-c", code, "analyze", "--json", "--only", "overview", str(trace)]
    outs: dict[str, str] = {}
    for rnd in range(rounds):
        for label, cmd in cmds.items():
            before, w = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=cwd.get(label, ROOT))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            c = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            if label != "scan":
                outs.setdefault(label, r.stdout)
            print(f"  round {rnd + 1}  {label:18s} CPU {c:6.2f} s  wall {time.perf_counter() - w:6.2f} s", flush=True)
    docs = [json.loads(v) for v in outs.values()]
    for doc in docs:
        doc.pop("timing", None)
        doc.pop("elapsed_s", None)
    same = all(d == docs[0] for d in docs[1:])
    print(f"  --json of the {len(docs)} first reports: {'same' if same else 'DIFFERENT'}")


def per_column(files: list[str]) -> None:
    """Each column overview_pe and the sweep read: its bytes on disk (footers) and the CPU seconds of
    reading it alone, by pyarrow (one thread, then its thread pool) and by DuckDB (count of it)."""
    metas = [pq.ParquetFile(f).metadata for f in files]
    con = duckdb.connect()
    print("  column      MiB on disk  pyarrow 1 thread  pyarrow threads  duckdb")
    for c in COLUMNS:
        size = sum(m.row_group(g).column(m.schema.names.index(c)).total_compressed_size
                   for m in metas for g in range(m.num_row_groups))
        cells = []
        for threads in (False, True):
            t0 = cpu()
            for f in files:
                pq.ParquetFile(f, read_dictionary=[c] if c in ONE_PASS_STRINGS else None).read(
                    columns=[c], use_threads=threads)
            cells.append(cpu() - t0)
        t0 = cpu()
        con.execute(f"SELECT count({c}) FROM read_parquet($f)", {"f": files}).fetchall()
        cells.append(cpu() - t0)
        print(f"  {c:10s} {size / 2**20:12.1f}  {cells[0]:16.2f}  {cells[1]:15.2f}  {cells[2]:6.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--designs", default=",".join(DESIGNS),
                    help="comma-separated designs to run, the first one the reference (default: all)")
    ap.add_argument("--cli", action="store_true",
                    help="instead: the first report (paradise analyze --json --only overview) as shipped and with "
                         "the one pass installed, in fresh interpreters, beside the bench's scan")
    ap.add_argument("--cli-designs", default="branch,one pass,one stream",
                    help="with --cli: which first reports of this tree (branch: as it ships, one pass, one stream)")
    ap.add_argument("--base", type=Path, default=None,
                    help="with --cli: also the first report of the paradise tree in this directory (e.g. main, "
                         "exported with git archive), run with it as the working directory")
    ap.add_argument("--columns", action="store_true", help="first, each column's bytes and read CPU alone")
    args = ap.parse_args()
    trace = open_trace(args.trace)
    if trace.corrections or trace.may_hold_pieces:
        raise SystemExit(f"{args.trace}: needs a trace without clock corrections or pieces (the tees read raw rows)")
    files = [str(f) for f in trace.files]
    print(f"{args.trace}: {trace.num_rows:,} rows, {len(files)} files; duckdb {duckdb.__version__}, "
          f"pyarrow {pa.__version__}, numpy {np.__version__}; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    if args.cli:
        first_reports(args.trace, args.rounds, args.cli_designs.split(","), args.base)
        return
    if args.columns:
        per_column(files)
    ref: tuple[pa.Table, Totals] | None = None
    for rnd in range(args.rounds):
        for label in args.designs.split(","):
            fn = DESIGNS[label]
            with DuckDBEngine(trace) as eng:
                c, w = cpu(), time.perf_counter()
                groups, totals = fn(eng, files)
                cs, ws = cpu() - c, time.perf_counter() - w
            if ref is None:
                ref = (groups, totals)
            same = "same" if same_groups(ref[0], groups) and ref[1] == totals else "DIFFERENT"
            print(f"  round {rnd + 1}  {label:20s} CPU {cs:6.2f} s  wall {ws:6.2f} s  overview_pe and busy: {same}",
                  flush=True)
    print(f"load at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
