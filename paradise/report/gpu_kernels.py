"""Terminal report of the kernel-type breakdown (paradise.analyses.gpu_kernels)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from paradise.report.tables import render_sections


def render(console: Console, result: dict[str, Any]) -> None:
    render_sections(console, "GPU kernel types", result, (
        ("ranks", "device time per rank (share of the span from first to last device row)",
         ("pe", "span_ns", "computation_share", "non_computation_share", "idle_share", "comm_comp_overlap_share")),
        ("types", "time by the set of kernel types running, all ranks", ("type", "time_ns", "share", "kernels")),
        ("steps", "per step (kernels in the step that launched them; share of the step's length)",
         ("pe", "step", "step_ns", "computation_share", "communication_share", "memory_share",
          "computation+communication_share")),
    ))  # fmt: skip
