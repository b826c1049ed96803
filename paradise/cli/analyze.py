"""`paradise analyze`: Classify a trace's characteristics and print the report."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("analyze", help="Classify a trace's characteristics and print the report.")
    def analyze_cmd() -> None:
        raise typer.Exit(1)  # placeholder until the owning issue lands
