"""Queue length per device stream: launched and not yet finished kernels over time, with summary
statistics, and the time the queue was full, when the host blocks on further launches.

Stage 1 is paradise/sql/gpu_queue_length.sql (a histogram of queue lengths per stream); stage 2
derives the statistics from it. Definitions: docs/analyses/gpu_queue.md.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from paradise.analyses.base import AnalysisConfig, AnalysisResult, Characteristic, Evidence
from paradise.analyses.devices import has_device_rows, records
from paradise.analyses.session import Session
from paradise.units import duration

MAX_QUEUE_LENGTH = 1024
"""CUDA's launch queue depth per stream: at this many pending launches the host blocks (HTA's
default max_queue_length)."""
SHALLOW_QUEUE = 1.0
"""A stream whose mean queue length (over its samples) is at most 1 is fed just in time: any
host hiccup idles the device."""


def applies(session: Session) -> bool:
    """Training traces with rows on a device stream."""
    return has_device_rows(session.trace)


def _quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """The q-quantile of a sample given as a histogram (HTA's describe(), linear interpolation)."""
    n = int(weights.sum())
    pos = q * (n - 1)
    cum = np.cumsum(weights)
    lo = int(np.searchsorted(cum, int(np.floor(pos)) + 1))
    hi = int(np.searchsorted(cum, int(np.ceil(pos)) + 1))
    return float(values[lo] + (values[hi] - values[lo]) * (pos - np.floor(pos)))


def summary(hist: pd.DataFrame) -> pd.DataFrame:
    """count, mean, std, min, quartiles, max of the samples, time-weighted mean, full-queue time."""
    rows = []
    for (pe, stream), g in hist.groupby(["pe", "stream"]):
        g = g.sort_values("queue_length")
        v, w, t = g["queue_length"].to_numpy(float), g["samples"].to_numpy(), g["time_ns"].to_numpy()
        n = int(w.sum())
        mean = float((v * w).sum() / n)
        std = float(np.sqrt(((v - mean) ** 2 * w).sum() / (n - 1))) if n > 1 else 0.0
        span = int(t.sum())
        rows.append({
            "pe": int(pe), "stream": int(stream), "count": n, "mean": round(mean, 4), "std": round(std, 4),
            "min": int(v[0]), "p25": _quantile(v, w, 0.25), "p50": _quantile(v, w, 0.5),
            "p75": _quantile(v, w, 0.75), "max": int(v[-1]),
            "time_mean": round(float((v * t).sum() / span), 4) if span else None,
            "full_ns": int(t[v >= MAX_QUEUE_LENGTH].sum()),
            "full_share": round(float(t[v >= MAX_QUEUE_LENGTH].sum() / span), 4) if span else None,
            "span_ns": span,
        })  # fmt: skip
    return pd.DataFrame(rows)


def _log2_buckets(hist: pd.DataFrame) -> pd.DataFrame:
    """Samples and time per stream by queue length in power-of-two buckets (0, 1, 2-3, 4-7, ...)."""
    q = hist["queue_length"].clip(lower=0)
    lo = np.where(q > 0, 2 ** np.floor(np.log2(q.clip(lower=1))), 0).astype(np.int64)
    g = hist.assign(from_length=lo).groupby(["pe", "stream", "from_length"])[["samples", "time_ns"]].sum()
    return g.reset_index()


def analyze(session: Session, config: AnalysisConfig | None = None) -> AnalysisResult:
    """Runs gpu_queue_length and summarises each stream's queue."""
    engine = session.engine
    config = config or AnalysisConfig()
    hist = engine.query("gpu_queue_length").to_pandas()
    result = AnalysisResult(name="gpu_queue")
    if hist.empty:
        return result
    s = summary(hist)
    busiest = s.sort_values("count", ascending=False).iloc[0]
    full = int(s["full_ns"].sum())
    result.characteristics.append(Characteristic(
        "training", "launch_queue", "full" if full else ("shallow" if busiest["mean"] <= SHALLOW_QUEUE else "fed"),
        (Evidence("mean_queue_length", busiest["mean"], "count", SHALLOW_QUEUE, "gpu_queue_length"),
         Evidence("max_queue_length", int(busiest["max"]), "count", MAX_QUEUE_LENGTH, "gpu_queue_length"),
         Evidence("stream", int(busiest["stream"]), "stream", None, "gpu_queue_length"),
         Evidence("rank", int(busiest["pe"]), "pe", None, "gpu_queue_length"),
         Evidence("full_queue", full, "ns", None, "gpu_queue_length")),
        0.8,
        f"The busiest stream (rank {int(busiest['pe'])}, stream {int(busiest['stream'])}) held {busiest['mean']:.2f} "
        f"launched kernels on average (max {int(busiest['max'])}); the host was blocked on a full queue for "
        f"{duration(full)}.",
    ))  # fmt: skip
    result.sections.update(streams=records(s), histogram=records(_log2_buckets(hist)))
    return result
