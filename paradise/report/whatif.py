"""Terminal report of `paradise whatif`: measured, replayed and predicted makespan, PE loads."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from paradise import units
from paradise.report.console import console, shown


def render(result: dict[str, Any]) -> None:
    c = console()
    c.print(f"[bold]{shown(result['trace'])}[/bold]  what-if under {shown(', '.join(result['hints']))} "
            f"({result['execs']:,} executions on {result['pes']} PEs)")
    c.print(f"measured makespan        {units.duration(result['measured_makespan_ns'])}")
    c.print(f"replay, current mapping  {units.duration(result['baseline_replay_makespan_ns'])}")
    c.print(f"replay, with the hints   {units.duration(result['replay_makespan_ns'])}")
    c.print(f"[bold]predicted makespan       {units.duration(result['predicted_makespan_ns'])}[/bold]"
            f"  ({result['predicted_speedup']}x)")
    t = Table(title="load per PE", title_justify="left")
    for col in ("PE", "now", "with the hints"):
        t.add_column(col, justify="right")
    for p, (a, b) in enumerate(zip(result["baseline_pe_load_ns"], result["pe_load_ns"])):
        t.add_row(str(p), units.duration(a), units.duration(b))
    c.print(t)
    m = result["model"]
    c.print(f"message cost fitted: {units.duration(m['a_ns'])} + {units.number(m['ns_per_byte'])} ns/byte across PEs, "
            f"{units.duration(m['local_ns'])} on one PE ({units.count(m['samples'])} samples)")
