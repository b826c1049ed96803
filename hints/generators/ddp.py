"""DDP bucket-size hints: the gradient bucket_cap_mb for the next run, from measured all-reduce
latency, bandwidth, bucket counts and how much communication is exposed.

Pure functions over plain numbers (no torch): the training analysis measures, this decides."""

from __future__ import annotations

import math
from typing import Any

LATENCY_SHARE_MAX = 0.20
"""A DDP bucket is too small when the per-call latency is over 20 % of its all-reduce time."""
EXPOSED_COMM_SHARE = 0.10
"""Communication not hidden behind compute above 10 % of step time is worth overlapping."""
FEW_BUCKETS = 2
"""At most this many buckets per step leaves backward nothing to overlap with: buckets too large."""
MIN_BUCKET_MB = 1.0
"""Never suggest buckets under 1 MB (DDP's own first bucket is 1 MiB)."""


def suggest(*, latency_ns: float | None, latency_share: float | None, min_good_bytes: float | None,
            buckets_per_step: float, bytes_per_step: float, exposed: float, backward_per_step: float,
            mean_step_ns: float) -> dict[str, Any]:
    """{verdict: ok | too_small | too_large, suggested_bucket_cap_mb, predicted_gain_ns_per_step}.

    too_small: latency is over LATENCY_SHARE_MAX of a bucket's all-reduce; the cap grows to the
    size whose latency share is 20 % (min_good_bytes = 4 x latency x bandwidth).
    too_large: at most FEW_BUCKETS buckets per step while communication is exposed; the cap shrinks
    to a quarter of the step's gradient bytes so that buckets overlap with backward."""
    out: dict[str, Any] = {"verdict": "ok", "suggested_bucket_cap_mb": None, "predicted_gain_ns_per_step": 0}
    if latency_share is not None and latency_share > LATENCY_SHARE_MAX and buckets_per_step > 1 and min_good_bytes:
        cap_mb = max(MIN_BUCKET_MB, math.ceil(min_good_bytes / 1e6 * 10) / 10)
        new_n = max(1.0, math.ceil(bytes_per_step / (cap_mb * 1e6)))
        out.update(verdict="too_small", suggested_bucket_cap_mb=cap_mb,
                   predicted_gain_ns_per_step=int(max(0.0, buckets_per_step - new_n) * (latency_ns or 0.0)))
    elif buckets_per_step <= FEW_BUCKETS and exposed > EXPOSED_COMM_SHARE and backward_per_step > 0:
        cap_mb = max(MIN_BUCKET_MB, round(bytes_per_step / 4 / 1e6, 1), math.ceil((min_good_bytes or 0) / 1e6 * 10) / 10)
        if cap_mb * 1e6 < bytes_per_step / buckets_per_step:
            # Up to 3/4 of the exposed communication can hide behind backward with 4 buckets.
            gain = min(exposed * mean_step_ns, backward_per_step) * 0.75
            out.update(verdict="too_large", suggested_bucket_cap_mb=cap_mb, predicted_gain_ns_per_step=int(gain))
    return out
