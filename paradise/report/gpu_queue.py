"""Terminal report of the launch queue (paradise.analyses.gpu_queue)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from paradise.report.tables import render_sections


def render(console: Console, result: dict[str, Any]) -> None:
    render_sections(console, "GPU launch queue", result, (
        ("streams", "queue length per stream (samples at every launch and end)",
         ("pe", "stream", "count", "mean", "std", "min", "p50", "max", "time_mean", "full_ns")),
    ))  # fmt: skip
