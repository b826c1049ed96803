"""Terminal report of the scheduling analysis: critical path entries, waiting, the hint."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from paradise import units
from paradise.report import generic
from paradise.report.placement import render_hints


def render(console: Console, result: dict[str, Any]) -> None:
    generic.render(console, result)
    rows = result.get("critical_entries") or []
    if rows:
        t = Table(title="entry methods on the critical path", title_justify="left")
        for col in ("collection", "entry", "execs", "compute", "share"):
            t.add_column(col, justify="right" if col in ("execs", "compute", "share") else "left")
        for r in rows:
            t.add_row(escape(r["coll"] or "-"), escape(str(r["entry"])), units.count(r["execs"]), units.duration(r["cost_ns"]),
                      f"{r['share']:.1%}")
        console.print(t)
    render_hints(console, result)
