"""Terminal report of the overview analysis: per-PE time, imbalance, top entries, traffic."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from paradise import units

MAX_PE_ROWS = 32
"""Above this many PEs the table shows the busiest and least busy halves of this many."""
MAX_NAME_CHARS = 44
"""Entry / op names are cut to this width (C++ signatures and Kineto names run long)."""
ENTRY_NUMBERS_WIDTH = 66
"""Width the entries table needs besides the name column (borders, coll/cat, five numbers)."""
MAX_EDGE_ROWS = 10
"""PE pairs shown in the message table (largest by bytes)."""


BROADCAST = "(broadcast)"
"""The `to PE` of sends without one destination PE: broadcasts and multicasts (trace-format.md:
a send's peer_pe is null for them)."""


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.1%}"


def _char(result: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((c for c in result["characteristics"] if c["name"] == name), None)


def _pe_table(rows: list[dict[str, Any]]) -> Table:
    shown = rows
    title = "time per PE"
    if len(rows) > MAX_PE_ROWS:
        by_busy = sorted(rows, key=lambda r: (-(r["busy_share"] or 0), r["pe"]))
        half = MAX_PE_ROWS // 2
        shown = by_busy[:half] + by_busy[-half:]
        title = f"time per PE ({half} busiest and {half} least busy of {len(rows)}; all in --json)"
    t = Table(title=title, title_justify="left")
    for col in ("PE", "span", "busy", "idle", "other", "busy %", "execs", "sends", "sent"):
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for r in shown:
        t.add_row(
            str(r["pe"]), units.duration(r["span_ns"]), units.duration(r["busy_ns"]),
            units.duration(r["idle_ns"]) + ("" if r["idle_from"] == "rows" else "*"), units.duration(r["other_ns"]),
            _pct(r["busy_share"]), f"{r['exec_rows']:,}", f"{r['sends']:,}", units.size(r["send_bytes"]),
        )
    return t


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def _entries_table(rows: list[dict[str, Any]], width: int) -> Table:
    """Names are cut to fit the console: the numbers matter more than long C++ signatures."""
    name_w = max(12, min(MAX_NAME_CHARS, width - ENTRY_NUMBERS_WIDTH))
    t = Table(title=f"top {len(rows)} entry methods / ops by total time (inclusive)", title_justify="left")
    t.add_column("name", no_wrap=True)
    t.add_column("coll / cat", no_wrap=True)
    for col in ("count", "total", "share", "mean", "max"):
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for r in rows:
        where = " / ".join(str(x) for x in (r["coll"], r["cat"]) if x)
        t.add_row(
            escape(_cut(str(r["name"] or "(unnamed)"), name_w)), escape(_cut(where, 16)) or "-", f"{r['count']:,}", units.duration(r["total_ns"]), _pct(r["share"]),
            units.duration(r["mean_ns"]), units.duration(r["max_ns"]),
        )
    return t


def _top_pairs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The MAX_EDGE_ROWS PE pairs with the most bytes."""
    key = lambda r: (-r["bytes"], r["pe"], r["peer_pe"] if r["peer_pe"] is not None else -1)  # noqa: E731
    return sorted(rows, key=key)[:MAX_EDGE_ROWS]


def _comm_table(top: list[dict[str, Any]]) -> Table:
    t = Table(title=f"largest {min(MAX_EDGE_ROWS, len(top))} PE pairs by bytes", title_justify="left")
    for col in ("from PE", "to PE", "messages", "bytes"):
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for r in top:
        peer = BROADCAST if r["peer_pe"] is None else str(r["peer_pe"])
        t.add_row(str(r["pe"]), peer, f"{r['messages']:,}", units.size(r["bytes"]))
    return t


def _collectives_table(rows: list[dict[str, Any]]) -> Table:
    by_name: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_name.setdefault(str(r["name"]), []).append(r)
    t = Table(title="collectives (per-rank total time inside them, least .. most; the slowest rank, the one "
                    "that arrived last, is in the training section)", title_justify="left")
    t.add_column("name")
    for col in ("ranks", "calls", "bytes", "time min", "time max", "most time: rank"):
        t.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    for name, rs in sorted(by_name.items()):
        slow = max(rs, key=lambda r: r["total_ns"])
        t.add_row(
            escape(name), str(len(rs)), f"{sum(r['count'] for r in rs):,}", units.size(sum(r["bytes"] for r in rs)),
            units.duration(min(r["total_ns"] for r in rs)), units.duration(slow["total_ns"]), str(slow["pe"]),
        )
    return t


def render(console: Console, result: dict[str, Any]) -> None:
    """Prints the overview section of `paradise analyze`."""
    s = result["summary"]
    console.rule("[bold]overview[/bold]", align="left")
    console.print(
        f"{s['pes']} PE{'' if s['pes'] == 1 else 's'} over {units.duration(s['span_ns'])}; "
        + (f"busy {units.duration(s['busy_ns'])}" if s.get("busy_known", True) else "busy unknown")
        + f", idle {units.duration(s['idle_ns'])} (busy = union of running intervals: executions, their pieces, phases)"
    )
    for name in ("busy_share", "load_imbalance"):
        c = _char(result, name)
        if c:
            console.print(f"  {escape(str(c['summary']))}")
    if result["per_pe"]:
        console.print(_pe_table(result["per_pe"]))
        if any(r["idle_from"] != "rows" for r in result["per_pe"]):
            console.print("  * the trace has no idle rows for that PE: its time not busy is other")
    if result["top_entries"]:
        console.print(_entries_table(result["top_entries"], console.width))
    if result["comm_matrix"]:
        tot = result["comm_totals"]
        local = tot["local_bytes"] / tot["bytes"] if tot["bytes"] else 0.0
        console.print(
            f"messages: {tot['messages']:,} ({units.size(tot['bytes'])}) over {tot['pairs']:,} PE pairs; "
            f"{local:.0%} of bytes stayed on their PE"
        )
        top = _top_pairs(result["comm_matrix"])
        console.print(_comm_table(top))
        if any(r["peer_pe"] is None for r in top):
            console.print(f"  {BROADCAST}: broadcasts and multicasts, sent to several PEs at once")
    if result["collectives"]:
        console.print(_collectives_table(result["collectives"]))
