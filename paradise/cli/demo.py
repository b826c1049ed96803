"""`paradise demo`: Trace, analyze, hint and rerun an example: the closed loop."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("demo", help="Trace, analyze, hint and rerun an example: the closed loop.")
    def demo_cmd() -> None:
        raise typer.Exit(1)  # placeholder until the owning issue lands
