"""User annotation breakdown on CPU and GPU (record_function ranges and their GPU twins): time per
annotation and the device rows each covers, so a user sees which of their own regions cost what.

Stage 1 is paradise/sql/annotations_spans.sql; stage 2 adds shares. Definitions:
docs/analyses/annotations.md.
"""

from __future__ import annotations

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence
from paradise.analyses.devices import records
from paradise.analyses.session import Session
from paradise.units import count, duration


def applies(session: Session) -> bool:
    """Kineto and Nsight Systems traces (user annotations and NVTX ranges are profiler categories)."""
    return session.trace.source in ("kineto", "nsys")


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Runs annotations_spans and names the costliest annotation on each side."""
    engine = session.engine
    config = config or AnalysisConfig()
    rows = engine.query("annotations_spans").to_pandas()
    result = AnalysisResult(name="annotations")
    if rows.empty:
        return result
    for side in ("cpu", "gpu"):
        s = rows[rows["side"] == side].copy()
        if s.empty:
            continue
        s["kernel_share"] = (s["kernel_ns"] / s["total_ns"].where(s["total_ns"] > 0)).round(4)
        top = s.sort_values(["total_ns", "name"], ascending=[False, True]).iloc[0]
        result.characteristics.append(Characteristic(
            "training", f"{side}_annotations", str(top["name"]),
            (Evidence("annotations", int(s["name"].nunique()), "count", None, "annotations_spans"),
             Evidence("top_total", int(top["total_ns"]), "ns", None, "annotations_spans"),
             Evidence("top_kernels", int(top["kernels"]), "count", None, "annotations_spans"),
             Evidence("top_kernel_time", int(top["kernel_ns"]), "ns", None, "annotations_spans")),
            1.0,
            f"{s['name'].nunique()} {side.upper()} annotation(s); the longest, {top['name']!r}, took "
            f"{duration(top['total_ns'])} over {int(top['spans'])} span(s) and covers {count(top['kernels'])} "
            f"device row(s) ({duration(top['kernel_ns'])}).",
        ))  # fmt: skip
        result.sections[side] = records(s.sort_values(["pe", "total_ns"], ascending=[True, False]))
    return result
