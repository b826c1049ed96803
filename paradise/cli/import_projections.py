"""`paradise import projections`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Adds the `projections` subcommand to `paradise import` (filled in by the importer's owner)."""
