"""`paradise trace`: run a program with a tracer on (charm4py under charmrun, PyTorch under torchrun)."""

from __future__ import annotations

import typer

from paradise.cli import trace_charm, trace_torch

app = typer.Typer(help="Run a program with tracing on.", no_args_is_help=True)
trace_charm.register(app)
trace_torch.register(app)
