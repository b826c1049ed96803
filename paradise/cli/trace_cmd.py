"""`paradise trace`: run a program with a tracer on (charm4py under charmrun, PyTorch under torchrun)."""

from __future__ import annotations

import typer

app = typer.Typer(help="Run a program with tracing on.", no_args_is_help=True)
