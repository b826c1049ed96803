"""Terminal report of idle time by cause (paradise.analyses.gpu_idle)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from paradise.report.tables import render_sections


def render(console: Console, result: dict[str, Any]) -> None:
    render_sections(console, "GPU idle time by cause", result, (
        ("streams", "idle time per stream by cause",
         ("pe", "stream", "idle_ns", "host_wait_share", "kernel_wait_share", "other_share")),
    ))  # fmt: skip
