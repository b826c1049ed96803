"""`paradise merge`: Merge a trace directory into one Parquet file."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("merge", help="Merge a trace directory into one Parquet file.")
    def merge_cmd() -> None:
        raise typer.Exit(1)  # placeholder until the owning issue lands
