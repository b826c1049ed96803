"""Terminal report of the communication analysis: patterns per collection and phase, streams."""

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
    patterns = result.get("patterns") or {}
    if patterns:
        t = Table(title="communication pattern per collection and phase (entry method)", title_justify="left")
        for col in ("collection", "phase", "pattern", "confidence", "objects", "msgs", "bytes"):
            t.add_column(col, justify="right" if col in ("confidence", "objects", "msgs", "bytes") else "left")
        for coll, phases in sorted(patterns.items()):
            for p in phases:
                ev = p["evidence"]
                t.add_row(escape(coll), escape(p["phase"]), p["pattern"], f"{p['confidence']:.2f}",
                          str(ev.get("objects")), f"{ev.get('msgs', 0):,}", units.size(ev.get("bytes")))
        console.print(t)
    render_hints(console, result)
