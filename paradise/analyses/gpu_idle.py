"""Idle time by cause per device stream: the host had not launched the next kernel yet
(host_wait), the stream waited for another kernel or launch overhead (kernel_wait), or other.

Stage 1 is paradise/sql/gpu_idle_causes.sql; stage 2 sums per stream and rank. Definitions and
how they differ from HTA's idle-time breakdown: docs/analyses/gpu_idle.md.
"""

from __future__ import annotations

import pandas as pd

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence
from paradise.analyses.devices import has_device_rows, records
from paradise.analyses.session import Session
from paradise.units import duration

KERNEL_DELAY_NS = 30_000
"""Gaps shorter than 30 µs between two rows on a stream are back-to-back launch overhead
(kernel_wait): HTA's default `consecutive_kernel_delay` (30, in its microsecond times)."""
HOST_BOUND_SHARE = 0.5
"""A stream whose idle time is more than half host_wait is reported as host-bound."""
CAUSES = ("host_wait", "kernel_wait", "other")


def applies(session: Session) -> bool:
    """Training traces with rows on a device stream."""
    return has_device_rows(session.trace)


def per_stream(raw: pd.DataFrame) -> pd.DataFrame:
    """One row per (pe, stream): idle per cause and each cause's share of the stream's idle time."""
    wide = raw.pivot_table(index=["pe", "stream"], columns="cause", values="idle_ns", aggfunc="sum", fill_value=0)
    wide = wide.reindex(columns=list(CAUSES), fill_value=0).reset_index()
    wide.columns = ["pe", "stream", *[f"{c}_ns" for c in CAUSES]]
    wide["idle_ns"] = wide[[f"{c}_ns" for c in CAUSES]].sum(axis=1)
    for c in CAUSES:
        wide[f"{c}_share"] = (wide[f"{c}_ns"] / wide["idle_ns"].where(wide["idle_ns"] > 0)).round(4)
    return wide.sort_values(["pe", "stream"])


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Runs gpu_idle_causes and reports the cause that dominates the idle time."""
    engine = session.engine
    config = config or AnalysisConfig()
    raw = engine.query("gpu_idle_causes", kernel_delay_ns=KERNEL_DELAY_NS).to_pandas()
    result = AnalysisResult(name="gpu_idle")
    if raw.empty:
        return result
    streams = per_stream(raw)
    tot = {c: int(streams[f"{c}_ns"].sum()) for c in CAUSES}
    idle = sum(tot.values())
    shares = {c: round(v / idle, 4) if idle else 0.0 for c, v in tot.items()}
    dominant = max(shares, key=shares.get)
    result.characteristics.append(Characteristic(
        "training", "device_idle_cause", "host_bound" if shares["host_wait"] > HOST_BOUND_SHARE else dominant,
        tuple(Evidence(f"{c}_share", shares[c], "fraction", HOST_BOUND_SHARE if c == "host_wait" else None,
                       "gpu_idle_causes") for c in CAUSES)
        + (Evidence("idle", idle, "ns", None, "gpu_idle_causes"),
           Evidence("kernel_delay", KERNEL_DELAY_NS, "ns", None, "gpu_idle_causes")),
        0.8,
        f"Device streams idled {duration(idle)} between kernels: {shares['host_wait']:.0%} waiting for the "
        f"host to launch, {shares['kernel_wait']:.0%} waiting on other kernels or launch overhead, "
        f"{shares['other']:.0%} other.",
    ))  # fmt: skip
    result.sections.update(streams=records(streams), gaps=records(raw))
    return result
