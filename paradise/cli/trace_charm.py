"""`paradise trace charm`."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Adds the `charm` subcommand to `paradise trace` (filled in by the tracer's owner)."""
