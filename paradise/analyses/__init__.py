"""Analyses, one module per characteristic family. The CLI iterates ANALYSES in this order.

Contract of each module `paradise.analyses.<name>`:
    applies(session: Session) -> bool   (the trace as session.trace; a check that reads rows uses session.engine)
    analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult
Pure: no printing, no file writes. Stage-1 SQL lives in paradise/sql/<analysis>_<what>.sql.
Rendering lives in paradise/report/<name>.py as render(console, result_dict).
"""

from __future__ import annotations

ANALYSES: tuple[str, ...] = (
    "overview", "placement", "communication", "scheduling", "resilience", "training",
    "gpu_kernels", "gpu_idle", "gpu_queue", "gpu_launches", "annotations", "step_critical_path",
)  # fmt: skip
"""Module names under paradise.analyses, in report order. Owners append theirs."""
