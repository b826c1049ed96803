"""`paradise whatif`: Replay a trace under proposed hints and predict the next run."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from paradise.cli.memory_option import budget, memory_limit_option


def register(app: typer.Typer) -> None:
    @app.command("whatif", help="Replay a trace under proposed hints and predict the next run.")
    def whatif_cmd(
        trace: Path = typer.Argument(..., help="Trace file or directory."),
        hints: Path = typer.Option(..., "--hints", metavar="DIR", help="Directory with mapping.json, schedule.json and/or comm.json (judged as the next run judges them)."),
        as_json: bool = typer.Option(False, "--json", help="Print the prediction as JSON."),
        memory_limit: str | None = memory_limit_option("the replay"),
    ) -> None:
        """Predicted makespan and per-PE load under the hints, beside the baseline replay."""
        from paradise.run import open_run
        from paradise.store import open_trace
        from paradise.whatif import load_hints, predict

        limit = budget(memory_limit)
        handle = open_trace(trace, limit)
        loaded = load_hints(handle, hints)  # judged before the engine starts
        with open_run(handle, memory_limit=limit) as session:
            result = predict(session, loaded)
        result["trace"] = str(session.trace.path)
        if as_json:
            typer.echo(json.dumps(result, indent=1, sort_keys=True))
            return
        from paradise.report.whatif import render

        render(result)
