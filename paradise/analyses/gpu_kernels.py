"""Kernel-type breakdown per rank: how device time splits into computation, communication and
memory kernels, the time they overlap, and idle time, over the span from the rank's first to its
last device row (HTA's temporal and kernel-type breakdowns and its comm/comp overlap).

Stage 1 is paradise/sql/gpu_kernels_types.sql (a sweep over merged intervals per type) and
gpu_kernels_steps.sql (the same per step, as time and share of the step); stage 2 pivots them. Definitions: docs/analyses/gpu_kernels.md.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence
from paradise.analyses.devices import has_device_rows, records, type_label
from paradise.analyses.session import Session

LOW_OVERLAP = 0.5
"""Communication hidden behind computation less than half of its time is reported as exposed."""
MOSTLY_IDLE = 0.5
"""A device idle more than half of its kernel span is reported as starved."""


def applies(session: Session) -> bool:
    """Training traces with rows on a device stream."""
    return has_device_rows(session.trace)


def per_rank(types: pd.DataFrame) -> pd.DataFrame:
    """One row per rank: span, idle, computation, non-computation, overlap and per-type times."""
    rows = []
    for pe, g in types.groupby("pe"):
        t = dict(zip(g["mask"], g["time_ns"]))
        span = int(sum(t.values()))
        comp = int(sum(v for m, v in t.items() if m & 1))
        comm = int(sum(v for m, v in t.items() if m & 2))
        overlap = int(sum(v for m, v in t.items() if m & 3 == 3))
        row: dict[str, Any] = {
            "pe": int(pe), "span_ns": span, "idle_ns": int(t.get(0, 0)), "computation_ns": comp,
            "non_computation_ns": span - comp - int(t.get(0, 0)), "communication_ns": comm,
            "comm_comp_overlap_ns": overlap,
            "comm_comp_overlap_share": round(overlap / comm, 4) if comm else None,
        }  # fmt: skip
        for key in ("idle_ns", "computation_ns", "non_computation_ns"):
            row[key.replace("_ns", "_share")] = round(row[key] / span, 4) if span else None
        rows.append(row)
    return pd.DataFrame(rows)


def by_type(types: pd.DataFrame) -> pd.DataFrame:
    """Time per exact set of kernel types running (e.g. computation+communication), all ranks."""
    busy = types[types["mask"] > 0]
    g = busy.groupby("mask").agg(time_ns=("time_ns", "sum"), kernels=("kernels", "sum"),
                                 kernel_ns=("kernel_ns", "sum")).reset_index()  # fmt: skip
    total = g["time_ns"].sum()
    g["type"] = g["mask"].map(type_label)
    g["share"] = (g["time_ns"] / total).round(4) if total else None
    return g.sort_values("time_ns", ascending=False)[["type", "mask", "time_ns", "share", "kernels", "kernel_ns"]]


MAX_STEP_ROWS = 5000
"""Per-step rows kept in the JSON result."""


def per_step(steps: pd.DataFrame) -> pd.DataFrame:
    """One row per (rank, step): time per kernel type set as time and share of the step."""
    if steps.empty:
        return steps
    wide = steps.assign(type=steps["mask"].map(type_label)).pivot_table(
        index=["pe", "step", "step_ns"], columns="type", values="time_ns", aggfunc="sum", fill_value=0)
    wide.columns = [f"{c}_ns" for c in wide.columns]
    wide = wide.reset_index()
    for c in [c for c in wide.columns if c.endswith("_ns") and c != "step_ns"]:
        wide[c.replace("_ns", "_share")] = (wide[c] / wide["step_ns"].where(wide["step_ns"] > 0)).round(4)
    return wide


def _characteristics(ranks: pd.DataFrame) -> list[Characteristic]:
    out = []
    idle = ranks.sort_values("idle_share", ascending=False).iloc[0]
    out.append(Characteristic(
        "training", "device_kernel_mix", "starved" if idle["idle_share"] > MOSTLY_IDLE else "busy",
        (Evidence("max_idle_share", idle["idle_share"], "fraction", MOSTLY_IDLE, "gpu_kernels_types"),
         Evidence("rank", int(idle["pe"]), "pe", None, "gpu_kernels_types"),
         Evidence("computation_share", idle["computation_share"], "fraction", None, "gpu_kernels_types"),
         Evidence("non_computation_share", idle["non_computation_share"], "fraction", None, "gpu_kernels_types")),
        1.0,
        f"Rank {int(idle['pe'])}'s device computed {idle['computation_share']:.1%}, communicated or copied "
        f"{idle['non_computation_share']:.1%} and idled {idle['idle_share']:.1%} of its kernel span.",
    ))  # fmt: skip
    comm = ranks.dropna(subset=["comm_comp_overlap_share"])
    if not comm.empty:
        low = comm.sort_values("comm_comp_overlap_share").iloc[0]
        share = float(low["comm_comp_overlap_share"])
        out.append(Characteristic(
            "training", "comm_comp_overlap", "exposed" if share < LOW_OVERLAP else "overlapped",
            (Evidence("min_overlap_share", share, "fraction", LOW_OVERLAP, "gpu_kernels_types"),
             Evidence("rank", int(low["pe"]), "pe", None, "gpu_kernels_types"),
             Evidence("communication", int(low["communication_ns"]), "ns", None, "gpu_kernels_types")),
            1.0,
            f"On rank {int(low['pe'])}, {share:.0%} of the communication kernels' time overlapped computation.",
        ))  # fmt: skip
    return out


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Runs gpu_kernels_types and derives the per-rank breakdown and the overlap."""
    engine = session.engine
    config = config or AnalysisConfig()
    types = engine.query("gpu_kernels_types").to_pandas()
    result = AnalysisResult(name="gpu_kernels")
    if types.empty:
        return result
    ranks = per_rank(types)
    result.characteristics = _characteristics(ranks)
    steps = per_step(engine.query("gpu_kernels_steps").to_pandas())
    result.sections.update(ranks=records(ranks), types=records(by_type(types)),
                           steps=records(steps.head(MAX_STEP_ROWS)))  # fmt: skip
    return result
