"""`paradise policy`: Plan a checkpoint policy without a trace."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("policy", help="Plan a checkpoint policy without a trace.")
    def policy_cmd() -> None:
        raise typer.Exit(1)  # placeholder until the owning issue lands
