"""Report pieces every analysis shares: the trace header line and a characteristics table.

`paradise analyze` uses render() for any analysis without its own paradise/report/<name>.py.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from paradise import units

MAX_VALUE_CHARS = 60
"""Longer values (per-PE dicts, lists) are cut in the terminal; --json has them whole."""


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


_UNIT_FORMAT = {"ns": units.duration, "s": units.seconds, "bytes": units.size}
"""Evidence units whose figures the value column prints with their unit."""


def value_text(c: dict[str, Any]) -> str:
    """A characteristic's value for the terminal: a number takes the unit of the evidence that
    holds the same figure (the critical path's 162821700 is `length_ns`: 163 ms); other numbers
    are grouped (2,470) and never in scientific notation."""
    v = c.get("value")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return _short(v)
    for e in c.get("evidence") or []:
        ev = e.get("value")
        if type(ev) is type(v) and ev == v and e.get("unit") in _UNIT_FORMAT:
            return _UNIT_FORMAT[e["unit"]](v)
    return units.count(v) if isinstance(v, int) else units.number(v, 4)


def render_header(console: Console, info: dict[str, Any]) -> None:
    """One line naming the trace: path, source, program, PEs, rows, whether the run finished."""
    status = "finished" if info.get("complete") else "[red]did not finish (no clean close)[/red]"
    console.print(
        f"[bold]{escape(str(info['path']))}[/bold]  {escape(str(info.get('source')))}  "
        f"program={escape(str(info.get('program') or '?'))}  "
        f"PEs={info.get('pes')}  files={info.get('files')}  rows={info.get('rows', 0):,}  {status}"
    )


def render(console: Console, result: dict[str, Any]) -> None:
    """Characteristics of one analysis as a table: name, value, confidence, summary."""
    console.rule(f"[bold]{escape(str(result.get('name', '?')))}[/bold]", align="left")
    chars = result.get("characteristics") or []
    if not chars:
        console.print("  (no characteristics)")
        return
    t = Table(show_lines=False)
    for col in ("characteristic", "value", "confidence", "summary"):
        t.add_column(col)
    for c in chars:
        t.add_row(
            escape(f"{c.get('category')}/{c.get('name')}"), escape(value_text(c)),
            f"{float(c.get('confidence', 1.0)):.2f}", escape(str(c.get("summary", ""))),
        )
    console.print(t)
