"""The --memory-limit option of every command that reads a trace: one help text and one parse, so
that each command's engine, clock alignment and spilling stay within the budget the user gives."""

from __future__ import annotations

from typing import Any

import typer


def memory_limit_option(subject: str) -> Any:
    """The typer option `--memory-limit SIZE` for a command whose work is `subject` ("the analysis")."""
    return typer.Option(
        None, "--memory-limit", metavar="SIZE",
        help=f"Memory {subject} may use, e.g. 4GiB (default: half of physical memory, or of the address-space "
        "limit when lower); DuckDB spills to disk beyond its share, under $TMPDIR; a larger budget keeps "
        "more of the work in memory and runs faster.")


def budget(text: str | None) -> int | None:
    """Bytes of --memory-limit, None when not given (the engines' default); a bad size is one line, exit 2."""
    from paradise.memory import parse_size

    return parse_size(text) if text is not None else None
