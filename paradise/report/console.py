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
    summaries = info.get("summaries")
    if isinstance(summaries, dict):
        c.print(f"summaries: {summaries['files']} of {info['files']} files carry one; the overview reads "
                + ("the footers" if summaries["used"] else "the rows"))
    print_clock(info.get("clock"))


CLOCK_ROWS = 16
"""PEs listed in `paradise info`'s clock table (the largest errors first); --json lists all."""


def print_clock(clock: Any) -> None:
    """The clock alignment: method, largest error, and the offsets to PE 0 (start -> end) per PE."""
    if not isinstance(clock, dict):
        return
    c = console()
    err = clock.get("residual_ns")
    c.print(f"clock: {shown(clock.get('method') or '?')}"
            + (f", largest error ±{units.duration(err)}" if isinstance(err, (int, float)) else ", error unknown"))
    refined = _print_refinement(clock.get("refinement"))
    offsets = clock.get("offsets")
    if not isinstance(offsets, dict) or not offsets:
        return
    t = Table(title="clock offsets to PE 0 (added to each PE's times when read)")
    for col in ("PE", "at start", "at end", "drift", "error") + (("shift", "then ±") if refined
                                                                  else ()):
        t.add_column(col, justify="right")
    ranked = sorted(offsets.items(), key=lambda kv: -(kv[1].get("error_ns") or 0))
    for pe, e in ranked[:CLOCK_ROWS]:
        start, end = e.get("start_ns"), e.get("end_ns")
        span = (e.get("t_end") or 0) - (e.get("t_start") or 0)
        drift = f"{(end - start) / span * 1e6:+.1f} ppm" if end is not None and start is not None and span > 0 else "-"
        row = [shown(pe), _signed_ns(start), _signed_ns(end), drift, units.duration(e.get("error_ns"))]
        if refined:
            r = refined.get(pe) if isinstance(refined.get(pe), dict) else {}
            err = r.get("error_ns", e.get("error_ns"))
            row += [_signed_ns(r.get("shift_ns", 0)), units.duration(err if isinstance(err, (int, float)) else None)]
        t.add_row(*row)
    c.print(t)
    if len(ranked) > CLOCK_ROWS:
        c.print(f"... {len(ranked) - CLOCK_ROWS} more PEs (--json lists all)")


def _print_refinement(refinement: Any) -> dict[str, Any]:
    """The line on the message-bound refinement of the offsets (paradise.store.clockrefine); its
    per-PE entries when it moved them ({} otherwise)."""
    if not isinstance(refinement, dict):
        return {}
    status, n, back = refinement.get("status"), refinement.get("messages"), refinement.get("backward_before")
    counts = (f"{n:,} cross-PE messages, {back:,} received before sent by the pings' offsets"
              if isinstance(n, int) and isinstance(back, int) else "")
    c = console()
    if status == "refined":
        err = refinement.get("residual_ns")
        c.print(f"  refined by {shown(refinement.get('method'))}" + (f" to ±{units.duration(err)}" if isinstance(err, int)
                                                                   else "")
                + f": {counts}; each PE shifted to the middle of what the messages allow")
        pes = refinement.get("pes")
        return pes if isinstance(pes, dict) else {}
    if status == "inconsistent":
        c.print(f"  [bold]clock bounds inconsistent[/bold] ({shown(refinement.get('method'))}): "
                f"{shown(refinement.get('detail') or counts)}")
    elif status == "no_messages":
        c.print(f"  not refined: no message crosses PEs ({shown(refinement.get('method'))})")
    return {}


def _signed_ns(ns: Any) -> str:
    if not isinstance(ns, (int, float)):
        return "-"
    return ("-" if ns < 0 else "+") + units.duration(abs(ns))
