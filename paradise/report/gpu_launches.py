"""Terminal report of kernel launch statistics (paradise.analyses.gpu_launches)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from paradise.report.tables import render_sections


def render(console: Console, result: dict[str, Any]) -> None:
    render_sections(console, "GPU kernel launches", result, (
        ("ranks", "launches per rank", ("pe", "launches", "graph_launches", "kernels", "cpu_mean_ns", "gpu_mean_ns", "delay_mean_ns",
                                        "max_delay_ns", "long_launches", "late", "short_share")),
        ("by_op", "CPU ops behind the kernels, most launch delay first", ("pe", "op", "launches", "delay_ns", "late")),
        ("by_delay", "kernels by total launch delay", ("pe", "op", "name", "launches", "delay_mean_ns", "max_delay_ns")),
    ))  # fmt: skip
