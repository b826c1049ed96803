"""Terminal report of the placement analysis: characteristics, mapping candidates, the hint."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from paradise import units
from paradise.report import generic


def render_hints(console: Console, result: dict[str, Any]) -> None:
    """One sentence per hint, as the analysis explained it."""
    for line in result.get("hint_explanations") or []:
        console.print(f"  [bold]hint[/bold] {escape(line)}")


def render(console: Console, result: dict[str, Any]) -> None:
    generic.render(console, result)
    loads = result.get("pe_load_ns") or []
    if loads and len(loads) <= 16:
        console.print("  busy per PE: " + ", ".join(f"PE {p} {units.duration(v)}" for p, v in enumerate(loads)))
    cands = result.get("mapping_candidates") or []
    if cands:
        t = Table(title="mapping candidates (what-if replay)", title_justify="left")
        for col in ("strategy", "justified by", "moves", "replay makespan", "predicted makespan", "max PE load"):
            t.add_column(col, justify="right" if col not in ("strategy", "justified by") else "left")
        for c in cands:
            t.add_row(c["strategy"], c["justified_by"], str(c["moves"]), units.duration(c["replay_makespan_ns"]),
                      units.duration(c["predicted_makespan_ns"]), units.duration(c["max_pe_load_ns"]))
        console.print(t)
    render_hints(console, result)
