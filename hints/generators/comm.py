"""Communication hints: which message streams should combine their messages, and in what batches.

Pure functions over plain data. A candidate is a (src_pe, dst_pe, entry) stream with many
messages that are all small: sending them in batches saves the per-message cost. Same-PE streams
are proposed only on request (`same_pe`, for charm4py runs): there every message, local or not, is
pickled and delivered by a Python scheduler callback, which the consumer's unpickled batches to the
PE's own receiver skip (measured on particles: docs/benchmarks.md, tune run 11).
"""

from __future__ import annotations

from typing import Any

COMBINE_MIN_MSGS = 64
"""A stream needs at least this many messages to be worth combining (below, savings are noise)."""
COMBINE_MAX_BYTES = 4096
"""Messages up to this size are 'small': their cost is dominated by the per-message overhead."""
BATCH_BYTES = 32 * 1024
"""Payload bytes a batch may hold: the batch is this over the stream's largest message (8 for
messages of COMBINE_MAX_BYTES, 372 for particles' 88 B). A batch also leaves when its sender returns
to the scheduler, so a large one delays nothing past the scheduler callback that filled it; fewer
wire messages are what removes the per-message cost under load (docs/benchmarks.md). particles'
`step` broadcast runs every cell of a PE in one callback: ~1,470 messages to the other PE per step,
4 batches of 372 instead of 184 of 8."""
BATCH_MAX = 1024
"""Most messages proposed per batch (the consumer accepts up to hints.kinds.comm.MAX_BATCH)."""
BATCH = 8
"""Fewest messages proposed per batch (and the batch of a stream whose sizes are unknown)."""


def batch_for(max_bytes: int | None) -> int:
    """Messages per batch for a stream whose largest message is `max_bytes`: BATCH_BYTES of payload,
    within BATCH..BATCH_MAX."""
    if not max_bytes or max_bytes <= 0:
        return BATCH
    return max(BATCH, min(BATCH_MAX, BATCH_BYTES // int(max_bytes)))


def combine_candidates(streams: list[dict[str, Any]], *, min_msgs: int = COMBINE_MIN_MSGS,
                       max_bytes: int = COMBINE_MAX_BYTES, same_pe: bool = False) -> list[dict[str, Any]]:
    """Point-to-point streams [{src_pe, dst_pe, entry, msgs, bytes, max_bytes}] worth combining,
    most messages first: between two PEs, and within one PE when `same_pe`."""
    out = []
    for s in streams:
        p2p = int(s["msgs"])
        if p2p >= min_msgs and (s.get("max_bytes") or 0) <= max_bytes and (same_pe or s["src_pe"] != s["dst_pe"]):
            biggest = int(s.get("max_bytes") or 0)
            out.append({"src_pe": int(s["src_pe"]), "dst_pe": int(s["dst_pe"]), "entry": str(s["entry"]),
                        "msgs": p2p, "mean_bytes": round(s["bytes"] / max(s["msgs"], 1), 1),
                        "max_bytes": biggest, "batch": batch_for(biggest)})
    return sorted(out, key=lambda c: (-c["msgs"], c["src_pe"], c["dst_pe"], c["entry"]))


def saving_ns(candidates: list[dict[str, Any]], per_message_ns: float, local_ns: float | None = None) -> float:
    """Per-message cost saved when each stream sends msgs/batch messages instead of msgs: a message
    between PEs costs per_message_ns, one within a PE local_ns (per_message_ns when not given)."""
    local = per_message_ns if local_ns is None else local_ns
    return sum((c["msgs"] - -(-c["msgs"] // c["batch"])) * (local if c["src_pe"] == c["dst_pe"] else per_message_ns)
               for c in candidates)
