"""`paradise whatif`: Replay a trace under proposed hints and predict the next run."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("whatif", help="Replay a trace under proposed hints and predict the next run.")
    def whatif_cmd() -> None:
        raise typer.Exit(1)  # placeholder until the owning issue lands
