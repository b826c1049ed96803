"""Kernel launch statistics: how long the host's launch calls take, how long the kernels run,
the delay from launch to start, outliers of each, and the CPU op behind each kernel.

Stage 1 is paradise/sql/gpu_launches.sql (one row per rank, op and kernel); stage 2 ranks them.
Definitions and thresholds: docs/analyses/gpu_launches.md.
"""

from __future__ import annotations

import pandas as pd

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence
from paradise.analyses.devices import has_device_rows, records
from paradise.analyses.session import Session
from paradise.units import duration

RUNTIME_CUTOFF_NS = 50_000
"""A launch call longer than 50 µs is an outlier (HTA's runtime_cutoff)."""
DELAY_CUTOFF_NS = 100_000
"""A kernel starting more than 100 µs after its launch is an outlier (HTA's launch_delay_cutoff)."""
SHORT_SHARE = 0.5
"""When more than half the launches run shorter on the device than their launch call took, the
host cannot keep the device busy: launches are the bottleneck (fuse kernels; capture the step in
a CUDA graph, unless the trace already launches graphs)."""
TOP_ROWS = 50
"""(op, kernel) rows kept per list in the result."""


def applies(session: Session) -> bool:
    """Training traces with rows on a device stream."""
    return has_device_rows(session.trace)


def per_rank(rows: pd.DataFrame) -> pd.DataFrame:
    g = rows.groupby("pe").agg(
        launches=("launches", "sum"), graph_launches=("graph_launches", "sum"), kernels=("kernels", "sum"), cpu_ns=("cpu_ns", "sum"), gpu_ns=("gpu_ns", "sum"), delay_ns=("delay_ns", "sum"),
        max_delay_ns=("max_delay_ns", "max"), long_launches=("long_launches", "sum"), late=("late", "sum"),
        short=("short", "sum"),
    ).reset_index()  # fmt: skip
    for c in ("cpu_ns", "gpu_ns", "delay_ns"):
        g[c.replace("_ns", "_mean_ns")] = (g[c] / g["launches"]).round(1)
    g["short_share"] = (g["short"] / g["launches"]).round(4)
    return g


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Runs gpu_launches and reports launch-bound ranks and the slowest-to-start kernels."""
    engine = session.engine
    config = config or AnalysisConfig()
    rows = engine.query("gpu_launches", runtime_cutoff_ns=RUNTIME_CUTOFF_NS, delay_cutoff_ns=DELAY_CUTOFF_NS).to_pandas()
    result = AnalysisResult(name="gpu_launches")
    if rows.empty:
        return result
    ranks = per_rank(rows)
    worst = ranks.sort_values("short_share", ascending=False).iloc[0]
    share = float(worst["short_share"])
    graphs, graph_kernels = int(ranks["graph_launches"].sum()), int(rows.loc[rows["graph_launches"] > 0, "kernels"].sum())
    bound = share > SHORT_SHARE
    if not bound:
        advice = ""
    elif graphs:
        advice = (f" The trace already launches CUDA graphs ({graphs:,} graph launch(es) running {graph_kernels:,} "
                  "kernels): fuse kernels or capture more of the step in them.")
    else:
        advice = " Fuse kernels, or capture the step in a CUDA graph (one launch for many kernels)."
    result.characteristics.append(Characteristic(
        "training", "kernel_launches", "launch_bound" if bound else "ok",
        (Evidence("short_kernel_share", share, "fraction", SHORT_SHARE, "gpu_launches"),
         Evidence("rank", int(worst["pe"]), "pe", None, "gpu_launches"),
         Evidence("mean_launch", float(worst["cpu_mean_ns"]), "ns", None, "gpu_launches"),
         Evidence("mean_delay", float(worst["delay_mean_ns"]), "ns", None, "gpu_launches"),
         Evidence("late_kernels", int(ranks["late"].sum()), "count", DELAY_CUTOFF_NS, "gpu_launches"),
         Evidence("long_launches", int(ranks["long_launches"].sum()), "count", RUNTIME_CUTOFF_NS, "gpu_launches"),
         Evidence("graph_launches", graphs, "count", None, "gpu_launches")),
        0.8,
        f"On rank {int(worst['pe'])}, {share:.0%} of the launches ran shorter on the device than their launch call "
        f"(mean launch {duration(worst['cpu_mean_ns'])}, mean delay to start {duration(worst['delay_mean_ns'])}); "
        f"{int(ranks['late'].sum())} launch(es) started over {DELAY_CUTOFF_NS // 1000} µs after the call.{advice}",
    ))  # fmt: skip
    rows["delay_mean_ns"] = (rows["delay_ns"] / rows["launches"]).round(1)
    result.sections.update(
        ranks=records(ranks),
        by_delay=records(rows.sort_values(["delay_ns", "name"], ascending=[False, True]).head(TOP_ROWS)),
        by_op=records(rows.groupby(["pe", "op"], dropna=False)[["launches", "kernels", "cpu_ns", "gpu_ns", "delay_ns", "late"]]
                      .sum().reset_index().sort_values("delay_ns", ascending=False).head(TOP_ROWS)),
    )  # fmt: skip
    return result
