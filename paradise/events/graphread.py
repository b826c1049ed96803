"""Readers of the exec graph a bucket at a time, and their exact merges.

A reader step runs one SQL file over one bucket of the graph (the temp view `graph_part`: a bucket's
Parquet file or its rows kept in the client's memory, or the engine's table of a one-bucket graph) and returns a small Arrow table; the
engine runs the steps (DuckDB: one after another; Dask: as tasks over its workers, so that no
process reads the whole graph), and the client merges them: by the SQL's `-- merge:` rule (sums,
counts, extremes), as a union of rows, or, for the message cost fit, quantiles from merged counts
per value (exact; above EXACT_QUANTILE_MAX_EXECS, in a bucket of more than EXACT_VALUES_MAX distinct
values, from values rounded to ROUND_BITS significant bits, a relative error of at most
2^-ROUND_BITS) and least-squares moments merged pairwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from paradise.engines import load_sql
from paradise.engines.merge import merge_partials, parse_merge_rule
from paradise.events import partitions

PART = "graph_part"
"""The view a reader step's SQL reads: one bucket of the exec graph."""
WHOLE = "exec_graph"
"""The engine table of a one-bucket graph (execgraph.TABLE), read whole by one step."""
ROUND_BITS = 12
"""Significant bits the fit's samples keep above EXACT_QUANTILE_MAX_EXECS: quantiles within a
relative 2^-12 (0.025 %) of the exact ones, in at most 2^12 distinct values per octave."""
EXACT_VALUES_MAX = 1 << 16
"""...unless a bucket's samples have at most this many distinct values: then they stay exact."""


KEPT = "graph_part_kept"
"""The name a kept bucket (an Arrow table in the client's memory, paradise.events.keptparts) is
registered under in a reader step's connection."""


def reader_step(con: Any, name: str, files: list[Any] | None, params: dict[str, Any]) -> pa.Table:
    """Query `name` over one bucket (`files`: its graph file, or its rows kept as an Arrow table;
    None: the engine's whole table), in the step's connection."""
    kept = bool(files) and isinstance(files[0], pa.Table)
    if kept:
        con.register(KEPT, files[0])
    source = KEPT if kept else f"read_parquet({partitions._files(files)})" if files else WHOLE
    con.execute(f"CREATE OR REPLACE TEMP VIEW {PART} AS SELECT * FROM {source}")
    try:
        return con.sql(load_sql(name), params=params or None).to_arrow_table()
    finally:
        con.execute(f"DROP VIEW IF EXISTS {PART}")
        if kept:
            con.unregister(KEPT)


def read(engine: Any, parts: tuple[Any, ...], name: str, **params: Any) -> list[pa.Table]:
    """Query `name`'s result in every bucket of the graph (`parts`: its files or kept tables; none:
    the engine's one-bucket table), one engine step each."""
    items = [{"name": name, "files": [f], "params": params} for f in parts] or [
        {"name": name, "files": None, "params": params}]
    return engine.run_steps(reader_step, items, files=[[] for _ in items])


def merged(engine: Any, parts: tuple[Any, ...], name: str, **params: Any) -> pa.Table:
    """Query `name` over the whole graph: the buckets' results merged by its `-- merge:` rule."""
    return merge_partials(read(engine, parts, name, **params), parse_merge_rule(load_sql(name), name), name)


def united(engine: Any, parts: tuple[Any, ...], name: str, **params: Any) -> pa.Table:
    """Query `name`'s rows over the whole graph: the buckets' rows together (each exec is in one bucket)."""
    return pa.concat_tables(read(engine, parts, name, **params))


def value_counts(tables: list[pa.Table]) -> dict[str, tuple[np.ndarray, np.ndarray, int]]:
    """Per sample of events_latency_samples' results: its distinct values ascending, their counts,
    and the samples' exact sum."""
    t = pa.concat_tables(tables)
    sample = t.column("sample").dictionary_encode().combine_chunks()  # codes, not a Python string per row
    names = sample.dictionary.to_pylist()
    code = sample.indices.to_numpy(zero_copy_only=False)
    value = t.column("value").to_numpy()
    n = t.column("n").to_numpy().astype(np.int64)
    total = t.column("total").to_numpy().astype(np.int64)
    out = {}
    for i, s in sorted(enumerate(names), key=lambda kv: str(kv[1])):
        keep = code == i
        vals, inv = np.unique(value[keep], return_inverse=True)
        out[str(s)] = (vals, np.bincount(inv, weights=n[keep]).astype(np.int64), int(total[keep].sum()))
    return out


def quantile_cont(values: np.ndarray, counts: np.ndarray, q: float) -> float | None:
    """DuckDB's quantile_cont of the samples that `counts` of each of `values` (ascending) make:
    linear interpolation between the values at ranks floor and ceil of (n - 1) * q."""
    n = int(counts.sum())
    if n == 0:
        return None
    pos = (n - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    cum = np.cumsum(counts)
    v_lo = float(values[int(np.searchsorted(cum, lo, side="right"))])
    if hi == lo:
        return v_lo
    v_hi = float(values[int(np.searchsorted(cum, hi, side="right"))])
    frac = pos - lo
    return v_lo * (1 - frac) + v_hi * frac  # DuckDB's formula (its build may fuse the multiply-add: 1 ulp)


def moments(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """events_latency_kept's rows of every bucket merged (Chan et al.'s pairwise update): count,
    byte span, and the least-squares slope and intercept of delay on bytes (None without variance)."""
    n, mx, my, m2, c = 0, 0.0, 0.0, 0.0, 0.0
    lo_b, hi_b = None, None
    for r in rows:
        k = int(r["kept_n"] or 0)
        if k == 0:
            continue
        if n == 0:  # the first bucket's moments as they are (one bucket: DuckDB's own figures)
            n, mx, my, m2, c = k, float(r["mean_bytes"]), float(r["mean_delay"]), float(r["m2_bytes"]), \
                float(r["c_delay_bytes"])
        else:
            dx, dy = float(r["mean_bytes"]) - mx, float(r["mean_delay"]) - my
            tot = n + k
            m2 += float(r["m2_bytes"]) + dx * dx * n * k / tot
            c += float(r["c_delay_bytes"]) + dx * dy * n * k / tot
            mx, my, n = mx + dx * k / tot, my + dy * k / tot, tot
        lo_b = r["min_bytes"] if lo_b is None else min(lo_b, r["min_bytes"])
        hi_b = r["max_bytes"] if hi_b is None else max(hi_b, r["max_bytes"])
    slope = c / m2 if n and m2 > 0 else None
    return {"kept_n": n, "kept_bytes_span": (hi_b - lo_b) if n else None, "slope_ns_per_byte": slope,
            "intercept_ns": my - slope * mx if slope is not None else None}
