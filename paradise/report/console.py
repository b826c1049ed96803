"""Terminal rendering with rich. The only module family that imports rich."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.segment import Segment
from rich.table import Table

from paradise import units
from paradise.report.text import LAYOUT_RE as _CONTROL_RE
from paradise.report.text import visible


def shown(value: Any) -> str:
    """Untrusted text (a name from a trace, a hint file, an outputs file) for rich: control
    characters made visible and markup escaped, so it prints as the characters it holds."""
    return escape(visible(str(value)))


class SafeConsole(Console):
    """A Console on which no string can carry a control character to the terminal: every string
    rendered (print, table cells, rule titles) has them made visible. Markup in untrusted text is
    escaped where it is formatted in (shown())."""

    def render_str(self, text: str, **kwargs: Any):  # type: ignore[override]
        return super().render_str(visible(text), **kwargs)

    def render(self, renderable: Any, options: Any = None) -> Iterator[Segment]:  # type: ignore[override]
        """Every segment printed, Text objects in table cells included, with control characters
        in its text made visible (rich's own styling travels in Style objects, not in text)."""
        for seg in super().render(renderable, options):
            if not seg.control and _CONTROL_RE.search(seg.text):
                seg = Segment(visible(seg.text), seg.style)
            yield seg


def console() -> Console:
    return SafeConsole(highlight=False, emoji=False)


def print_info(info: dict[str, Any]) -> None:
    c = console()
    status = "[green]finished[/green]" if info["complete"] else "[red]did not finish (no clean close)[/red]"
    c.print(f"[bold]{shown(info['path'])}[/bold]  {shown(info['source'])}  program={shown(info['program'] or '?')}  "
            f"{status}")
    c.print(
        f"PEs/ranks: {info['pes']}   files: {info['files']}   rows: {info['rows']:,}   "
        f"span: {units.duration(info['span_ns'])}"
        + (f"   steps: {info['steps']['min']}..{info['steps']['max']}" if info["steps"] else "")
    )
    t = Table(title="events by kind")
    t.add_column("kind")
    t.add_column("events", justify="right")
    for k, n in info["events_by_kind"].items():
        t.add_row(shown(k), f"{n:,}")
    c.print(t)
