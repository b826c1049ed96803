"""`paradise compare`: Compare two traces (performance) and their model outputs."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("compare", help="Compare two traces (performance) and their model outputs.")
    def compare_cmd() -> None:
        raise typer.Exit(1)  # placeholder until the owning issue lands
