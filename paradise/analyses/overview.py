"""Overview: where each PE's time went, which entry methods / ops cost most, who talked to whom.

Stage 1 (paradise/sql/overview_pe*.sql): one scan aggregating rows per kind × PE × name × coll ×
cat × send destination (overview_pe), and each PE's span = busy + idle + other (overview_pe_time,
the one accounting of PE time, shared through the session). Stage 2 (SQL on those small tables,
paradise/sql/overview_{per_pe_counts,top_entries,comm_pairs,collectives}.sql, run by the session's
rollups; numpy here): busy share, load imbalance (max / mean busy), top entries,
point-to-point volume and collectives, each a roll-up of overview_pe. Docs: docs/analyses/overview.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence, json_scalar
from paradise.analyses.pe_time import BUSY_UNKNOWN, IMBALANCE_THRESHOLD, busy_known, load_imbalance
from paradise.analyses.session import Session

if TYPE_CHECKING:
    from paradise.engines.rollups import Rollups

DEFAULT_TOP = 10
"""Entries shown in top_entries unless --top says otherwise."""
COMM_MATRIX_MAX_EDGES = 10_000
"""Largest number of PE pairs kept in comm_matrix (by bytes); the totals always count all."""


def applies(session: Session) -> bool:
    """Every trace has PEs and times, so the overview always applies."""
    return True


_py = json_scalar
Columns = dict[str, np.ndarray]
"""A stage-2 result: numpy arrays by column name (masked arrays where a column has nulls)."""

PE_TIME_COLUMNS = ("t_first", "t_last", "span_ns", "busy_ns", "idle_ns", "other_ns", "busy_rows", "idle_rows")
"""The columns of overview_pe_time (the one accounting of a PE's time) that per_pe carries."""
__all__ = ["IMBALANCE_THRESHOLD", "analyze", "applies", "load_imbalance", "per_pe_table"]
Q = "overview_pe_time"
BUSY_METHOD = "union"
"""How busy time is measured, for the JSON and the report: the union of running intervals."""
def _records(cols: Columns, names: list[str], rows: slice = slice(None)) -> list[dict[str, Any]]:
    """Rows of the columns as JSON-safe dicts (masked values become None)."""
    lists = [cols[n][rows].tolist() for n in names]
    return [{n: _py(v) for n, v in zip(names, row)} for row in zip(*lists)]


def per_pe_table(pe_time: pa.Table, roll: Rollups) -> Columns:
    """One row per PE: span, busy, idle and other time as overview_pe_time accounts them (busy and
    other unknown, masked, when nothing in the trace measures busy time), plus row counts."""
    counts = roll("overview_per_pe_counts")
    pes = counts["pe"].tolist()
    at = {p: i for i, p in enumerate(pe_time.column("pe").to_pylist())}
    take = np.array([at[p] for p in pes], np.int64)  # both tables hold every PE that has a row
    t = {c: np.array(pe_time.column(c).to_pylist(), np.int64)[take] for c in PE_TIME_COLUMNS}
    unknown = np.full(len(pes), not busy_known(pe_time))
    span = t["span_ns"]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.round(t["busy_ns"] / np.where(span > 0, span, np.nan), 6)
    return {"pe": counts["pe"], "t_first": t["t_first"], "t_last": t["t_last"], "span_ns": span,
            "busy_ns": np.ma.array(t["busy_ns"], mask=unknown), "idle_ns": t["idle_ns"],
            "other_ns": np.ma.array(t["other_ns"], mask=unknown),
            "busy_share": np.ma.masked_invalid(np.ma.array(share, mask=unknown)),
            "idle_from": np.where(t["idle_rows"] > 0, "rows", "none"), "rows": counts["rows"],
            "exec_rows": counts["exec_rows"], "busy_rows": t["busy_rows"], "sends": counts["sends"],
            "send_bytes": counts["send_bytes"]}


def _busy_share(per_pe: Columns, known: bool) -> Characteristic:
    pes, shares = per_pe["pe"].tolist(), per_pe["busy_share"].tolist()
    has = [i for i, v in enumerate(shares) if v is not None]
    valid = np.array([shares[i] for i in has], np.float64)
    mean = float(valid.mean()) if len(valid) else None
    lo_pe = int(pes[has[int(valid.argmin())]]) if len(valid) else None
    hi_pe = int(pes[has[int(valid.argmax())]]) if len(valid) else None
    evidence = (
        Evidence("mean_busy_share", None if mean is None else round(mean, 4), "fraction", None, Q),
        Evidence("min_busy_share", _py(valid.min()) if len(valid) else None, "fraction", None, Q),
        Evidence("min_pe", lo_pe, "pe", None, Q),
        Evidence("max_busy_share", _py(valid.max()) if len(valid) else None, "fraction", None, Q),
        Evidence("max_pe", hi_pe, "pe", None, Q),
        Evidence("busy_method", BUSY_METHOD, "", None, Q),
    )
    if not known:
        summary = f"Busy share is unknown: {BUSY_UNKNOWN}."
    elif mean is None:
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
        value={str(int(p)): _py(v) for p, v in zip(pes, shares)} if known else None,
        evidence=evidence,
        confidence=1.0 if known else 0.0,
        summary=summary,
    )


def _top_entries(roll: Rollups, top: int) -> tuple[list[dict[str, Any]], int]:
    e = roll("overview_top_entries")
    total = int(e["total_ns"].sum())
    e["mean_ns"] = np.round(e["total_ns"] / e["count"], 1)
    e["share"] = np.round(e["total_ns"] / total, 6) if total else np.zeros(len(e["count"]))
    names = ["name", "coll", "cat", "count", "total_ns", "mean_ns", "max_ns", "share"]
    return _records(e, names, slice(0, top)), total


def _comm(roll: Rollups) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    c = roll("overview_comm_pairs")  # heaviest first, for the cut to COMM_MATRIX_MAX_EDGES
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
    c = roll("overview_collectives")
    c["mean_ns"] = np.round(c["total_ns"] / c["count"], 1)
    return _records(c, ["name", "pe", "count", "bytes", "total_ns", "mean_ns", "max_ns"])


NEEDS = frozenset({"overview_groups", "pe_time"})
"""Shared results the overview reads (paradise.analyses.session.SHARED): its group table, which
placement and communication roll up too, and the accounting of PE time."""


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Busy/idle per PE, load imbalance, top entries, message and collective volume."""
    config = config or AnalysisConfig()
    top = int(config.options.get("top") or DEFAULT_TOP)
    pe_time = session.get("pe_time")
    known = busy_known(pe_time)
    roll = session.rollups("overview_groups")
    try:
        per_pe = per_pe_table(pe_time, roll)
        entries, exec_total = _top_entries(roll, top)
        comm, comm_totals = _comm(roll)
        collectives = _collectives(roll)
    finally:
        roll.close()
    span = int(per_pe["t_last"].max() - per_pe["t_first"].min()) if len(per_pe["pe"]) else 0
    summary = {
        "pes": len(per_pe["pe"]),
        "span_ns": span,
        "busy_method": BUSY_METHOD,
        "busy_known": known,
        "busy_ns": int(per_pe["busy_ns"].sum()) if known else None,
        "idle_ns": int(per_pe["idle_ns"].sum()),
        "exec_ns": exec_total,
        "messages": comm_totals["messages"],
        "bytes": comm_totals["bytes"],
        "collectives": int(sum(r["count"] for r in collectives)),
        "collective_bytes": int(sum(r["bytes"] for r in collectives)),
    }
    return AnalysisResult(
        name="overview",
        characteristics=[_busy_share(per_pe, known), load_imbalance(pe_time)],
        sections={
            "summary": summary,
            "per_pe": _records(per_pe, list(per_pe)),
            "top_entries": entries,
            "comm_matrix": comm,
            "comm_totals": comm_totals,
            "collectives": collectives,
        },
    )
