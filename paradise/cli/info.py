"""`paradise info`: what a trace holds (source, PEs, events by kind, time span, steps)."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from paradise.analyses.runner import trace_summary
from paradise.cli.memory_option import budget, memory_limit_option


def trace_info(path: Path, memory_limit: int | None = None) -> dict:
    from paradise.run import open_run

    with open_run(path, memory_limit=memory_limit) as session:
        rows = session.engine.query("info_kinds").to_pylist()
    trace = session.trace
    kinds = {r["kind"]: r["events"] for r in rows}
    t_min = min((r["t_min"] for r in rows if r["t_min"] is not None), default=None)
    t_max = max((r["t_max"] for r in rows if r["t_max"] is not None), default=None)
    steps = [r for r in rows if r["step_min"] is not None]
    meta = trace.metadata
    return {
        **trace_summary(trace),
        "pes_seen": meta.get("pes_seen"),
        "events_by_kind": kinds,
        "span_ns": (t_max - t_min) if t_min is not None and t_max is not None else 0,
        "clock": meta.get("clock"),
        "summaries": {
            "files": sum(trace.summary(f) is not None for f in trace.sql_files()),
            "used": trace.summaries(trace.sql_files()) is not None,
        },
        "steps": {
            "min": min(r["step_min"] for r in steps),
            "max": max(r["step_max"] for r in steps),
        }
        if steps
        else None,
    }


def register(app: typer.Typer) -> None:
    @app.command("info")
    def info_cmd(
        trace: Path = typer.Argument(..., help="Trace file or directory."),
        as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
        memory_limit: str | None = memory_limit_option("reading the trace"),
    ) -> None:
        """Show what a trace holds: source, PEs/ranks, events by kind, time span, steps, clock alignment.

        The clock alignment: per-PE offsets to PE 0 at start and end, and their error. Summaries: how
        many files carry the overview's rows in their footer, and whether the overview reads those
        instead of the rows (every file has a valid one and no clock correction)."""
        info = trace_info(trace, budget(memory_limit))
        if as_json:
            typer.echo(json.dumps(info, indent=2, sort_keys=True))
            return
        from paradise.report.console import print_info

        print_info(info)
