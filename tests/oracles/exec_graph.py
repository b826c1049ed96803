"""Oracles for the event layer's exec-graph results, written plainly over the whole graph in
numpy: the walk along critical predecessors and the message cost fit. The event layer computes
both in SQL without loading the graph (paradise.events.critpath, paradise.events.execgraph)."""

from __future__ import annotations

import numpy as np

from paradise.events.execgraph import (
    FEW_SAMPLES_QUANTILE,
    LATENCY_FIT_QUANTILE,
    MIN_FIT_SAMPLES,
    LatencyModel,
)
from paradise.whatif.model import ExecGraph


def critical_path(g: ExecGraph) -> np.ndarray:
    """Exec ids on the critical path, first to last: back from the exec whose active time ends
    last (the lowest id on a tie), one critical predecessor at a time, stopping at a cycle."""
    if g.n == 0:
        return np.zeros(0, np.int64)
    pred = g.crit_pred.tolist()
    cur = int(np.argmax(g.t0 + g.cost))
    path, seen = [cur], {cur}
    while pred[cur] >= 0 and pred[cur] not in seen:
        cur = pred[cur]
        seen.add(cur)
        path.append(cur)
    return np.asarray(path[::-1], np.int64)


def fit_latency(g: ExecGraph) -> LatencyModel:
    """Fits a + b*bytes on cross-PE send->exec gaps where the receiver was idle at the send.

    Gaps where the receiver was busy include queueing, so only messages that found their PE
    free are used; the local cost is the median of such same-PE gaps.
    """
    has = (g.src >= 0) & (g.send_t0 >= 0)
    prev_end = np.where(g.pe_prev >= 0, g.t1[np.where(g.pe_prev >= 0, g.pe_prev, 0)], -1)
    idle_at_send = has & (prev_end <= g.send_t0)
    delay = (g.t0 - g.send_t0).astype(np.float64)
    cross = idle_at_send & (g.src_pe != g.pe) & (delay >= 0)
    local = idle_at_send & (g.src_pe == g.pe) & (delay >= 0)
    a, b = 0.0, 0.0
    any_cross = has & (g.src_pe != g.pe) & (delay >= 0)
    if cross.sum() < MIN_FIT_SAMPLES and any_cross.any():
        # too few idle receivers to fit: the fastest deliveries bound the latency from above
        a = float(np.quantile(delay[any_cross], FEW_SAMPLES_QUANTILE))
    elif cross.sum() >= 1:
        d, x = delay[cross], g.nbytes[cross].astype(np.float64)
        keep = d <= np.quantile(d, LATENCY_FIT_QUANTILE) if len(d) > 4 else np.ones(len(d), bool)
        d, x = d[keep], x[keep]
        if len(d) >= 3 and np.ptp(x) > 0:
            b, a = np.polyfit(x, d, 1)
            if b < 0 or a < 0:
                a, b = float(np.median(d)), 0.0
        else:
            a = float(np.median(d))
    local_ns = float(np.median(delay[local])) if local.any() else min(a, 1_000.0)
    # busy PE: the next exec's message was there before the previous exec ended
    busy = (g.pe_prev >= 0) & (~has | (g.send_t0 < prev_end))
    overhead = float(np.median(g.gap[busy])) if busy.any() else 0.0
    overhead_mean = float(np.mean(g.gap[busy])) if busy.any() else 0.0
    return LatencyModel(a_ns=max(float(a), 0.0), ns_per_byte=max(float(b), 0.0), local_ns=max(local_ns, 0.0),
                        overhead_ns=max(overhead, 0.0), samples=int(max(cross.sum(), any_cross.sum())),
                        overhead_mean_ns=max(overhead_mean, 0.0))
