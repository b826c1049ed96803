"""Table rendering shared by the GPU analyses' reports: characteristics, then tables of records
whose cells are formatted by column name (`*_ns` as times, `*_share` as percentages)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from paradise import units
from paradise.report.console import visible

MAX_ROWS = 20
"""Rows shown per table; --json has them all."""
MAX_TEXT = 48
"""Names are cut to this width."""


def cell(column: str, value: Any) -> str:
    """A value formatted for its column."""
    if value is None:
        return "-"
    if column.endswith("_ns") and isinstance(value, (int, float)):
        return units.duration(value)
    if (column == "share" or column.endswith(("_share", "_ratio"))) and isinstance(value, (int, float)):
        return f"{value:.1%}"
    if column.endswith("bytes") and isinstance(value, (int, float)):
        return units.size(value)
    if isinstance(value, float):
        return f"{units.number(value, 4)}"
    if isinstance(value, int):
        return f"{value:,}"
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "…"


def table(title: str, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> Table:
    """A table of the first MAX_ROWS records, the given columns only; trace text is never markup."""
    shown = rows[:MAX_ROWS]
    t = Table(title=title + (f" — first {len(shown)} of {len(rows)}" if len(rows) > len(shown) else ""),
              title_justify="left")  # fmt: skip
    for c in columns:
        t.add_column(c, justify="left" if c in ("name", "type", "category", "op", "kernel") else "right")
    for r in shown:
        t.add_row(*(Text(visible(cell(c, r.get(c)))) for c in columns))
    return t


def render_sections(console: Console, name: str, result: dict[str, Any],
                    sections: tuple[tuple[str, str, tuple[str, ...]], ...]) -> None:
    """The analysis' characteristics, then one table per (key, title, columns) present."""
    console.rule(f"[bold]{name}[/bold]", align="left")
    for c in result.get("characteristics", []):
        console.print(Text(visible(f"  {c['name']}: {c['summary']}")))
    for key, title, columns in sections:
        rows = result.get(key)
        if rows:
            console.print(table(title, rows, columns))
