"""`paradise import`: bring in traces that already exist (Projections logs, Kineto JSON)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Import foreign traces into paradise Parquet.", no_args_is_help=True)
