"""Overview: where each PE's time went, which entry methods / ops cost most, who talked to whom.

Stage 1 (paradise/sql/overview_*.sql): one scan aggregating rows per kind × PE × name × coll ×
cat × send destination (overview_pe), and the union busy time where rows nest. Stage 2 (here,
SQL and numpy on that small table; see Rollups): per-PE time accounting, busy share,
load imbalance (max / mean busy), top entries, point-to-point volume and collectives, each a
roll-up of overview_pe. Docs: docs/analyses/overview.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence, json_scalar
from paradise.analyses.session import Session
from paradise.engines import Engine
from paradise.importers import training_like
from paradise.store import TraceHandle

IMBALANCE_THRESHOLD = 1.10
"""max/mean PE busy above which load is called imbalanced: under 10 % lost to the slowest PE,
moving objects rarely repays its own cost (a heuristic; the placement analysis refines it)."""
DEFAULT_TOP = 10
"""Entries shown in top_entries unless --top says otherwise."""
COMM_MATRIX_MAX_EDGES = 10_000
"""Largest number of PE pairs kept in comm_matrix (by bytes); the totals always count all."""
BUSY_MODES = ("auto", "sum", "union")


def applies(trace: TraceHandle) -> bool:
    """Every trace has PEs and times, so the overview always applies."""
    return True


_py = json_scalar
Columns = dict[str, np.ndarray]
"""A stage-2 result: numpy arrays by column name (masked arrays where a column has nulls)."""

PER_PE_SQL = """
SELECT pe, sum(rows)::BIGINT AS rows, min(t_first) AS t_first, max(t_last) AS t_last,
       {parts}
FROM groups GROUP BY pe ORDER BY pe NULLS LAST"""
PER_PE_PARTS = {"exec_rows": ("rows", "exec"), "exec_ns": ("dur_ns", "exec"), "idle_rows": ("rows", "idle"),
                "idle_ns": ("dur_ns", "idle"), "sends": ("rows", "send"), "send_bytes": ("bytes", "send")}
"""Per-PE sums of one kind's rows: column -> (overview_pe column, kind)."""
TOP_ENTRIES_SQL = """
SELECT name, coll, cat, sum(rows)::BIGINT AS count, coalesce(sum(dur_ns), 0)::BIGINT AS total_ns,
       max(max_ns) AS max_ns
FROM groups WHERE kind = 'exec' GROUP BY name, coll, cat
ORDER BY total_ns DESC, name NULLS LAST, coll NULLS LAST, cat NULLS LAST"""
COMM_SQL = """
SELECT pe, peer_pe, sum(rows)::BIGINT AS messages, coalesce(sum(bytes), 0)::BIGINT AS bytes
FROM groups WHERE kind = 'send' GROUP BY pe, peer_pe
ORDER BY bytes DESC, pe NULLS LAST, peer_pe NULLS LAST"""
COLLECTIVES_SQL = """
SELECT name, pe, sum(rows)::BIGINT AS count, coalesce(sum(bytes), 0)::BIGINT AS bytes,
       coalesce(sum(dur_ns), 0)::BIGINT AS total_ns, max(max_ns) AS max_ns
FROM groups WHERE kind = 'collective' GROUP BY name, pe ORDER BY name NULLS LAST, pe NULLS LAST"""


class Rollups:
    """Stage 2's group-bys, in SQL on a private DuckDB connection over the overview_pe table
    (a few hundred to a few thousand rows). Results come back as numpy arrays, never through
    pyarrow's numpy or pandas conversions: those import pandas, a sixth of a second that a
    first report (`paradise analyze --only overview`) would pay for nothing."""

    def __init__(self, groups: pa.Table) -> None:
        import duckdb

        self.con = duckdb.connect(":memory:")
        self.con.register("groups", groups)

    def __call__(self, sql: str) -> Columns:
        return self.con.sql(sql).fetchnumpy()

    def close(self) -> None:
        self.con.close()


def _records(cols: Columns, names: list[str], rows: slice = slice(None)) -> list[dict[str, Any]]:
    """Rows of the columns as JSON-safe dicts (masked values become None)."""
    lists = [cols[n][rows].tolist() for n in names]
    return [{n: _py(v) for n, v in zip(names, row)} for row in zip(*lists)]


def _busy(engine: Engine, trace: TraceHandle, pe: Columns, mode: str) -> tuple[np.ndarray, str]:
    """Busy ns per PE and the method used: the sum of exec time, or the union of intervals.

    auto: union for training sources (importers.training_like: their exec rows nest or run
    concurrently on one rank), and wherever the sum exceeds a PE's span (rows overlap
    even though the source says they should not); else the sum, which needs no sort."""
    if mode not in BUSY_MODES:
        raise ValueError(f"busy mode {mode!r} is not one of {BUSY_MODES}")
    span = pe["t_last"] - pe["t_first"]
    use_union = mode == "union" or (
        mode == "auto" and (training_like(trace.source) or bool((pe["exec_ns"] > span).any()))
    )
    if not use_union:
        return pe["exec_ns"], "sum"
    union = engine.query("overview_busy_union")
    busy_of = dict(zip(union["pe"].to_pylist(), union["busy_ns"].to_pylist()))  # one entry per PE
    return np.array([busy_of.get(p) or 0 for p in pe["pe"].tolist()], np.int64), "union"


def per_pe_table(engine: Engine, trace: TraceHandle, roll: Rollups, mode: str = "auto") -> tuple[Columns, str]:
    """One row per PE: span, busy, idle (idle rows when the trace has them, else span - busy)."""
    parts = ", ".join(f"coalesce(sum({col}) FILTER (WHERE kind = '{kind}'), 0)::BIGINT AS {name}"
                      for name, (col, kind) in PER_PE_PARTS.items())
    pe = roll(PER_PE_SQL.format(parts=parts))
    busy, method = _busy(engine, trace, pe, mode)
    span = pe["t_last"] - pe["t_first"]
    busy = np.minimum(busy, span)
    has_idle = pe["idle_rows"] > 0
    idle = np.where(has_idle, pe["idle_ns"], np.maximum(span - busy, 0))
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.round(busy / np.where(span > 0, span, np.nan), 6)
    out = {"pe": pe["pe"], "t_first": pe["t_first"], "t_last": pe["t_last"], "span_ns": span, "busy_ns": busy,
           "idle_ns": idle, "other_ns": span - busy - idle, "busy_share": np.ma.masked_invalid(share),
           "idle_from": np.where(has_idle, "rows", "span-busy"), "rows": pe["rows"],
           "exec_rows": pe["exec_rows"], "sends": pe["sends"], "send_bytes": pe["send_bytes"]}
    return out, method


def _imbalance(per_pe: Columns, method: str) -> Characteristic:
    busy = per_pe["busy_ns"]
    mean = float(busy.mean()) if len(busy) else 0.0
    ratio = float(busy.max()) / mean if mean > 0 else 1.0
    pe_max = int(per_pe["pe"][busy.argmax()]) if len(busy) else None
    query = "overview_busy_union" if method == "union" else "overview_pe"
    verdict = "imbalanced" if ratio > IMBALANCE_THRESHOLD else "balanced"
    return Characteristic(
        category="overview",
        name="load_imbalance",
        value=round(ratio, 4),
        evidence=(
            Evidence("max_pe_busy", int(busy.max()) if len(busy) else 0, "ns", None, query),
            Evidence("max_pe", pe_max, "pe", None, query),
            Evidence("mean_pe_busy", round(mean, 1), "ns", None, query),
            Evidence("max_over_mean", round(ratio, 4), "ratio", IMBALANCE_THRESHOLD, query),
            Evidence("pes", len(busy), "count", None, "overview_pe"),
        ),
        confidence=1.0 if len(busy) >= 2 else 0.3,
        summary=(
            f"Load is {verdict}: the busiest PE ({pe_max}) worked {ratio:.2f}x the mean "
            f"(threshold {IMBALANCE_THRESHOLD})."
            if len(busy) >= 2
            else "Only one PE in the trace: load imbalance across PEs cannot be measured."
        ),
    )


def _busy_share(per_pe: Columns, method: str) -> Characteristic:
    pes, shares = per_pe["pe"].tolist(), per_pe["busy_share"].tolist()
    has = [i for i, v in enumerate(shares) if v is not None]
    valid = np.array([shares[i] for i in has], np.float64)
    mean = float(valid.mean()) if len(valid) else None
    lo_pe = int(pes[has[int(valid.argmin())]]) if len(valid) else None
    hi_pe = int(pes[has[int(valid.argmax())]]) if len(valid) else None
    evidence = (
        Evidence("mean_busy_share", None if mean is None else round(mean, 4), "fraction", None, "overview_pe"),
        Evidence("min_busy_share", _py(valid.min()) if len(valid) else None, "fraction", None, "overview_pe"),
        Evidence("min_pe", lo_pe, "pe", None, "overview_pe"),
        Evidence("max_busy_share", _py(valid.max()) if len(valid) else None, "fraction", None, "overview_pe"),
        Evidence("max_pe", hi_pe, "pe", None, "overview_pe"),
        Evidence("busy_method", method, "", None, "overview_busy_union" if method == "union" else "overview_pe"),
    )
    if mean is None:
        summary = "No PE has a time span; busy share is undefined."
    elif len(valid) == 1:
        summary = f"PE {hi_pe} was busy {mean:.0%} of its span."
    else:
        summary = (
            f"PEs were busy {mean:.0%} of their span on average (least {valid.min():.0%} on PE {lo_pe}, "
            f"most {valid.max():.0%} on PE {hi_pe})."
        )
    return Characteristic(
        category="overview",
        name="busy_share",
        value={str(int(p)): _py(v) for p, v in zip(pes, shares)},
        evidence=evidence,
        confidence=1.0,
        summary=summary,
    )


def _top_entries(roll: Rollups, top: int) -> tuple[list[dict[str, Any]], int]:
    e = roll(TOP_ENTRIES_SQL)
    total = int(e["total_ns"].sum())
    e["mean_ns"] = np.round(e["total_ns"] / e["count"], 1)
    e["share"] = np.round(e["total_ns"] / total, 6) if total else np.zeros(len(e["count"]))
    names = ["name", "coll", "cat", "count", "total_ns", "mean_ns", "max_ns", "share"]
    return _records(e, names, slice(0, top)), total


def _comm(roll: Rollups) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    c = roll(COMM_SQL)  # heaviest first, for the cut to COMM_MATRIX_MAX_EDGES
    n = len(c["bytes"])
    local = np.ma.filled(c["pe"] == c["peer_pe"], False)
    totals = {
        "messages": int(c["messages"].sum()),
        "bytes": int(c["bytes"].sum()),
        "pairs": n,
        "local_bytes": int(c["bytes"][local].sum()),
        "truncated": n > COMM_MATRIX_MAX_EDGES,
    }
    kept = {k: v[:COMM_MATRIX_MAX_EDGES] for k, v in c.items()}
    keys = [a for k in ("peer_pe", "pe") for a in (np.ma.filled(kept[k], 0), np.ma.getmaskarray(kept[k]))]
    order = np.lexsort(keys)  # by pe, then peer_pe, nulls last
    return _records({k: v[order] for k, v in kept.items()}, ["pe", "peer_pe", "messages", "bytes"]), totals


def _collectives(roll: Rollups) -> list[dict[str, Any]]:
    c = roll(COLLECTIVES_SQL)
    c["mean_ns"] = np.round(c["total_ns"] / c["count"], 1)
    return _records(c, ["name", "pe", "count", "bytes", "total_ns", "mean_ns", "max_ns"])


NEEDS = frozenset({"overview_groups"})
"""Shared results the overview reads (paradise.analyses.session.SHARED): its group table, which
placement and communication roll up too."""


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Busy/idle per PE, load imbalance, top entries, message and collective volume."""
    engine, trace = session.engine, session.trace
    config = config or AnalysisConfig()
    top = int(config.options.get("top") or DEFAULT_TOP)
    roll = Rollups(session.get("overview_groups"))
    try:
        per_pe, method = per_pe_table(engine, trace, roll, str(config.options.get("busy", "auto")))
        entries, exec_total = _top_entries(roll, top)
        comm, comm_totals = _comm(roll)
        collectives = _collectives(roll)
    finally:
        roll.close()
    span = int(per_pe["t_last"].max() - per_pe["t_first"].min()) if len(per_pe["pe"]) else 0
    summary = {
        "pes": len(per_pe["pe"]),
        "span_ns": span,
        "busy_method": method,
        "busy_ns": int(per_pe["busy_ns"].sum()),
        "idle_ns": int(per_pe["idle_ns"].sum()),
        "exec_ns": exec_total,
        "messages": comm_totals["messages"],
        "bytes": comm_totals["bytes"],
        "collectives": int(sum(r["count"] for r in collectives)),
        "collective_bytes": int(sum(r["bytes"] for r in collectives)),
    }
    return AnalysisResult(
        name="overview",
        characteristics=[_busy_share(per_pe, method), _imbalance(per_pe, method)],
        sections={
            "summary": summary,
            "per_pe": _records(per_pe, list(per_pe)),
            "top_entries": entries,
            "comm_matrix": comm,
            "comm_totals": comm_totals,
            "collectives": collectives,
        },
    )
