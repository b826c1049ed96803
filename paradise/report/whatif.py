"""Terminal report of `paradise whatif`: measured, replayed and predicted makespan, PE loads."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from paradise.report.console import console, fmt_ns, shown


def render(result: dict[str, Any]) -> None:
    c = console()
    c.print(f"[bold]{shown(result['trace'])}[/bold]  what-if under {shown(', '.join(result['hints']))} "
            f"({result['execs']:,} executions on {result['pes']} PEs)")
    c.print(f"measured makespan        {fmt_ns(result['measured_makespan_ns'])}")
    c.print(f"replay, current mapping  {fmt_ns(result['baseline_replay_makespan_ns'])}")
    c.print(f"replay, with the hints   {fmt_ns(result['replay_makespan_ns'])}")
    c.print(f"[bold]predicted makespan       {fmt_ns(result['predicted_makespan_ns'])}[/bold]"
            f"  ({result['predicted_speedup']}x)")
    t = Table(title="load per PE", title_justify="left")
    for col in ("PE", "now", "with the hints"):
        t.add_column(col, justify="right")
    for p, (a, b) in enumerate(zip(result["baseline_pe_load_ns"], result["pe_load_ns"])):
        t.add_row(str(p), fmt_ns(a), fmt_ns(b))
    c.print(t)
    m = result["model"]
    c.print(f"message cost fitted: {fmt_ns(m['a_ns'])} + {m['ns_per_byte']} ns/byte across PEs, "
            f"{fmt_ns(m['local_ns'])} on one PE ({m['samples']} samples)")
