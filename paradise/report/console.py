"""Terminal rendering with rich. The only module family that imports rich."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table


def console() -> Console:
    return Console(highlight=False)


def fmt_ns(ns: float | int | None) -> str:
    if ns is None:
        return "-"
    ns = float(ns)
    for unit, div in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= div:
            return f"{ns / div:.3g} {unit}"
    return f"{ns:.0f} ns"


def fmt_bytes(b: float | int | None) -> str:
    if b is None:
        return "-"
    b = float(b)
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= div:
            return f"{b / div:.3g} {unit}"
    return f"{b:.0f} B"


def print_info(info: dict[str, Any]) -> None:
    c = console()
    status = "[green]finished[/green]" if info["complete"] else "[red]did not finish (no clean close)[/red]"
    c.print(f"[bold]{info['path']}[/bold]  {info['source']}  program={info['program'] or '?'}  {status}")
    c.print(
        f"PEs/ranks: {info['pes']}   files: {info['files']}   rows: {info['rows']:,}   "
        f"span: {fmt_ns(info['span_ns'])}"
        + (f"   steps: {info['steps']['min']}..{info['steps']['max']}" if info["steps"] else "")
    )
    t = Table(title="events by kind")
    t.add_column("kind")
    t.add_column("events", justify="right")
    for k, n in info["events_by_kind"].items():
        t.add_row(str(k), f"{n:,}")
    c.print(t)
