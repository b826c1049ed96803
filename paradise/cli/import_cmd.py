"""`paradise import`: bring in traces that already exist (Projections logs, Kineto JSON)."""

from __future__ import annotations

import typer

from paradise.cli import import_kineto, import_projections

app = typer.Typer(help="Import foreign traces into paradise Parquet.", no_args_is_help=True)
import_projections.register(app)
import_kineto.register(app)
