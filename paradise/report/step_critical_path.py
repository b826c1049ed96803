"""Terminal report of the cross-rank critical path of a step (paradise.analyses.step_critical_path)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from paradise.report.tables import render_sections


def render(console: Console, result: dict[str, Any]) -> None:
    summary = result.get("summary") or {}
    render_sections(console, "step critical path", {**result, **summary}, (
        ("by_kind", "time on the path by kind", ("what", "dur_ns")),
        ("by_rank", "time on the path by rank", ("pe", "dur_ns")),
        ("kernels", "kernels on the path", ("pe", "name", "dur_ns")),
        ("ops", "CPU ops on the path (their launches, and CPU time between launches)", ("pe", "op", "dur_ns")),
    ))  # fmt: skip
