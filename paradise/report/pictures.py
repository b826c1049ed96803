"""Terminal pictures with rich: per-PE utilization bars, a utilization sparkline, before/after
bars. Built from small dicts and lists (the overview's per-PE rows, binned utilization, compare
changes); each fits an 80-column terminal.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from paradise import units

EIGHTHS = " ▏▎▍▌▋▊▉█"
SPARKS = "▁▂▃▄▅▆▇█"
MAX_BAR_ROWS = 16
"""PEs drawn as bars: above this many, the busiest and least busy halves (the table has them all)."""
SPARK_BINS = 60
"""Time bins of the sparkline: 60 characters leave room for its label in 80 columns."""
MAX_COMPARE_BARS = 8
"""Figures drawn as before/after bars in `paradise compare` (makespan, step time, busiest PEs)."""


def bar(share: float, width: int) -> str:
    """A horizontal bar `width` characters wide filled to `share` (0..1), in eighths of a cell."""
    share = min(max(share, 0.0), 1.0)
    eighths = round(share * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (EIGHTHS[part] if part else "")
    return text + " " * (width - len(text))


def sparkline(values: list[float], top: float = 1.0) -> str:
    """One character per value, its height the value's share of `top`."""
    if not values:
        return ""
    return "".join(SPARKS[min(len(SPARKS) - 1, max(0, int(v / top * len(SPARKS) - 1e-9)))] if top > 0 else SPARKS[0]
                   for v in values)


def utilization(console: Console, per_pe: list[dict[str, Any]], over_time: list[float] | None) -> None:
    """Busy share per PE as bars, then mean utilization over the run as a sparkline."""
    rows = sorted(per_pe, key=lambda r: r["pe"])
    title = "busy share per PE"
    if len(rows) > MAX_BAR_ROWS:
        by_busy = sorted(rows, key=lambda r: (-(r["busy_share"] or 0), r["pe"]))
        half = MAX_BAR_ROWS // 2
        rows = by_busy[:half] + by_busy[-half:]
        title += f" ({half} busiest and {half} least busy of {len(per_pe)})"
    width = max(10, min(50, console.width - 20))
    t = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    t.add_column("PE", justify="right", no_wrap=True)
    t.add_column("bar", no_wrap=True, style="cyan")
    t.add_column("busy", justify="right", no_wrap=True)
    for r in rows:
        share = r["busy_share"] or 0.0
        t.add_row(f"PE {r['pe']}", bar(share, width), f"{share:.0%}")
    console.print(t)
    if over_time:
        console.print(f"utilization over time ({len(over_time)} bins, start to end; full height = every PE busy)")
        console.print(Text("  " + sparkline(over_time), style="cyan"))


def compare_bars(console: Console, changes: list[dict[str, Any]]) -> None:
    """Base and candidate of the main time figures as pairs of bars on one scale."""
    picks = [c for name in ("makespan", "step_time") for c in changes if c["metric"] == name]
    busy = sorted((c for c in changes if c["metric"].endswith(".busy")), key=lambda c: -max(c["base"], c["candidate"]))
    picks += busy[: MAX_COMPARE_BARS - len(picks)]
    if not picks:
        return
    top = max(max(c["base"], c["candidate"]) for c in picks) or 1.0
    width = max(10, min(44, console.width - 36))
    t = Table(title="before / after", title_justify="left", show_header=False, box=None, pad_edge=False)
    for col in ("metric", "run", "bar", "value"):
        t.add_column(col, no_wrap=True, justify="right" if col == "value" else "left")
    for c in picks:
        fmt = units.duration if c["unit"] == "ns" else units.size if c["unit"] == "bytes" else (lambda v: f"{v:,.0f}")
        t.add_row(escape(c["metric"]), "base", Text(bar(c["base"] / top, width), style="bright_black"), fmt(c["base"]))
        t.add_row("", "candidate", Text(bar(c["candidate"] / top, width), style="cyan"), fmt(c["candidate"]))
    console.print(t)
