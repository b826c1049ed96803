"""Terminal report of the user annotation breakdown (paradise.analyses.annotations)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from paradise.report.tables import render_sections

COLUMNS = ("pe", "name", "spans", "total_ns", "max_ns", "kernels", "kernel_ns")


def render(console: Console, result: dict[str, Any]) -> None:
    render_sections(console, "user annotations", result, (
        ("cpu", "CPU annotations (device rows launched inside each)", COLUMNS),
        ("gpu", "GPU annotations (device rows running inside each)", COLUMNS),
    ))  # fmt: skip
