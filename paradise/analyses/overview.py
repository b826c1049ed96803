"""Overview: where each PE's time went, which entry methods / ops cost most, who talked to whom.

Stage 1 (analyses/sql/overview_*.sql): one scan aggregating rows per kind × PE × name × coll ×
cat × send destination (overview_pe), and the union busy time where rows nest. Stage 2 (here,
pandas on that small table): per-PE time accounting, busy share, load imbalance (max / mean
busy), top entries, point-to-point volume and collectives, each a roll-up of overview_pe. Docs:
docs/analyses/overview.md.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence, json_scalar
from paradise.engines import Engine
from paradise.format import TRAINING_SOURCES
from paradise.store import TraceHandle

IMBALANCE_THRESHOLD = 1.10
"""max/mean PE busy above which load is called imbalanced: under 10 % lost to the slowest PE,
moving objects rarely repays its own cost (a heuristic; the placement analysis refines it)."""
CONCURRENT_SOURCES = TRAINING_SOURCES
"""Sources whose exec rows nest (CPU ops in ops) or run concurrently (threads, GPU streams) on
one rank: busy is the union of their intervals. Other sources run one entry method at a time
per PE (Charm scheduler; coroutine suspension is excluded through `active`): busy is the sum."""
DEFAULT_TOP = 10
"""Entries shown in top_entries unless --top says otherwise."""
COMM_MATRIX_MAX_EDGES = 10_000
"""Largest number of PE pairs kept in comm_matrix (by bytes); the totals always count all."""
BUSY_MODES = ("auto", "sum", "union")


def applies(trace: TraceHandle) -> bool:
    """Every trace has PEs and times, so the overview always applies."""
    return True


_py = json_scalar


_NULLABLE = {pa.int8(): pd.Int8Dtype(), pa.int16(): pd.Int16Dtype(), pa.int32(): pd.Int32Dtype(),
             pa.int64(): pd.Int64Dtype()}


def _frame(engine: Engine, name: str) -> pd.DataFrame:
    """A stage-1 query as pandas, integer columns kept integer even with nulls (peer_pe)."""
    return engine.query(name).to_pandas(types_mapper=_NULLABLE.get)


def overview_groups(engine: Engine) -> pa.Table:
    """overview_pe, once per engine: placement rolls its collection kinds up from it too
    (paradise.analyses.placement.collection_kinds) instead of scanning the trace again."""
    from paradise.analyses.cache import cached

    return cached(engine, "overview_pe", lambda: engine.query("overview_pe"))


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: _py(v) for k, v in row.items()} for row in df.to_dict("records")]


def _busy(engine: Engine, trace: TraceHandle, pe: pd.DataFrame, mode: str) -> tuple[pd.Series, str]:
    """Busy ns per PE and the method used: the sum of exec time, or the union of intervals.

    auto: union for CONCURRENT_SOURCES, and wherever the sum exceeds a PE's span (rows overlap
    even though the source says they should not); else the sum, which needs no sort."""
    if mode not in BUSY_MODES:
        raise ValueError(f"busy mode {mode!r} is not one of {BUSY_MODES}")
    span = pe["t_last"] - pe["t_first"]
    use_union = mode == "union" or (
        mode == "auto" and (trace.source in CONCURRENT_SOURCES or bool((pe["exec_ns"] > span).any()))
    )
    if not use_union:
        return pe["exec_ns"].astype("int64"), "sum"
    union = _frame(engine, "overview_busy_union").set_index("pe")["busy_ns"]
    return union.reindex(pe.index).fillna(0).astype("int64"), "union"


def _rollup(groups: pd.DataFrame, kind: str, by: list[str], how: dict[str, str], **names: str) -> pd.DataFrame:
    """The `kind` rows of overview_pe summed up by `by` (null keys kept as a group, as in SQL)."""
    rows = groups.loc[groups["kind"] == kind, by + list(how)]
    return rows.groupby(by, dropna=False, sort=True).agg(how).reset_index().rename(columns=names)


def per_pe_table(
    engine: Engine, trace: TraceHandle, mode: str = "auto", groups: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, str]:
    """One row per PE: span, busy, idle (idle rows when the trace has them, else span - busy)."""
    g = _frame(engine, "overview_pe") if groups is None else groups
    kind, rows = g["kind"], g["rows"]
    is_exec, is_idle, is_send = kind.eq("exec"), kind.eq("idle"), kind.eq("send")
    parts = pd.DataFrame({
        "pe": g["pe"], "rows": rows, "t_first": g["t_first"], "t_last": g["t_last"],
        "exec_rows": rows.where(is_exec, 0), "exec_ns": g["dur_ns"].where(is_exec),
        "idle_rows": rows.where(is_idle, 0), "idle_ns": g["dur_ns"].where(is_idle),
        "sends": rows.where(is_send, 0), "send_bytes": g["bytes"].where(is_send),
    })
    how = {c: "sum" for c in parts.columns[1:]} | {"t_first": "min", "t_last": "max"}
    pe = parts.groupby("pe", dropna=False, sort=True).agg(how)  # sums of all-null parts are 0
    busy, method = _busy(engine, trace, pe, mode)
    pe["span_ns"] = pe["t_last"] - pe["t_first"]
    pe["busy_ns"] = busy.clip(upper=pe["span_ns"])
    has_idle = pe["idle_rows"] > 0
    pe["idle_ns"] = pe["idle_ns"].where(has_idle, (pe["span_ns"] - pe["busy_ns"]).clip(lower=0))
    pe["idle_from"] = has_idle.map({True: "rows", False: "span-busy"})
    pe["other_ns"] = pe["span_ns"] - pe["busy_ns"] - pe["idle_ns"]
    pe["busy_share"] = (pe["busy_ns"] / pe["span_ns"].where(pe["span_ns"] > 0)).round(6)
    cols = ["t_first", "t_last", "span_ns", "busy_ns", "idle_ns", "other_ns", "busy_share", "idle_from",
            "rows", "exec_rows", "sends", "send_bytes"]
    return pe[cols].reset_index(), method


def _imbalance(per_pe: pd.DataFrame, method: str) -> Characteristic:
    busy = per_pe["busy_ns"]
    mean = float(busy.mean()) if len(busy) else 0.0
    ratio = float(busy.max()) / mean if mean > 0 else 1.0
    pe_max = int(per_pe.loc[busy.idxmax(), "pe"]) if len(busy) else None
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


def _busy_share(per_pe: pd.DataFrame, method: str) -> Characteristic:
    share = per_pe.set_index("pe")["busy_share"]
    valid = share.dropna()
    mean = float(valid.mean()) if len(valid) else None
    lo_pe = int(valid.idxmin()) if len(valid) else None
    hi_pe = int(valid.idxmax()) if len(valid) else None
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
        value={str(int(p)): _py(v) for p, v in share.items()},
        evidence=evidence,
        confidence=1.0,
        summary=summary,
    )


def _top_entries(groups: pd.DataFrame, top: int) -> tuple[list[dict[str, Any]], int]:
    how = {"rows": "sum", "dur_ns": "sum", "max_ns": "max"}
    e = _rollup(groups, "exec", ["name", "coll", "cat"], how, rows="count", dur_ns="total_ns")
    total = int(e["total_ns"].sum()) if len(e) else 0
    e["mean_ns"] = (e["total_ns"] / e["count"]).round(1)
    e["share"] = (e["total_ns"] / total).round(6) if total else 0.0
    e = e.sort_values(["total_ns", "name", "coll", "cat"], ascending=[False, True, True, True],
                      na_position="last").head(top)
    return _records(e[["name", "coll", "cat", "count", "total_ns", "mean_ns", "max_ns", "share"]]), total


def _comm(groups: pd.DataFrame) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    c = _rollup(groups, "send", ["pe", "peer_pe"], {"rows": "sum", "bytes": "sum"}, rows="messages")
    local = c["pe"] == c["peer_pe"]
    totals = {
        "messages": int(c["messages"].sum()),
        "bytes": int(c["bytes"].sum()),
        "pairs": len(c),
        "local_bytes": int(c.loc[local, "bytes"].sum()),
        "truncated": len(c) > COMM_MATRIX_MAX_EDGES,
    }
    c = c.sort_values(["bytes", "pe", "peer_pe"], ascending=[False, True, True]).head(COMM_MATRIX_MAX_EDGES)
    c = c.sort_values(["pe", "peer_pe"], na_position="last")
    return _records(c[["pe", "peer_pe", "messages", "bytes"]]), totals


def _collectives(groups: pd.DataFrame) -> list[dict[str, Any]]:
    how = {"rows": "sum", "bytes": "sum", "dur_ns": "sum", "max_ns": "max"}
    c = _rollup(groups, "collective", ["name", "pe"], how, rows="count", dur_ns="total_ns")
    c["mean_ns"] = (c["total_ns"] / c["count"]).round(1)
    c = c.sort_values(["name", "pe"], na_position="last")
    return _records(c[["name", "pe", "count", "bytes", "total_ns", "mean_ns", "max_ns"]])


def analyze(engine: Engine, trace: TraceHandle, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Busy/idle per PE, load imbalance, top entries, message and collective volume."""
    config = config or AnalysisConfig()
    top = int(config.options.get("top") or DEFAULT_TOP)
    groups = overview_groups(engine).to_pandas(types_mapper=_NULLABLE.get)
    per_pe, method = per_pe_table(engine, trace, str(config.options.get("busy", "auto")), groups)
    entries, exec_total = _top_entries(groups, top)
    comm, comm_totals = _comm(groups)
    collectives = _collectives(groups)
    span = int(per_pe["t_last"].max() - per_pe["t_first"].min()) if len(per_pe) else 0
    summary = {
        "pes": len(per_pe),
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
            "per_pe": _records(per_pe),
            "top_entries": entries,
            "comm_matrix": comm,
            "comm_totals": comm_totals,
            "collectives": collectives,
        },
    )
