"""Communication hints: which PE pairs and entry methods should combine their messages.

Pure functions over plain data. A candidate is a (src_pe, dst_pe, entry) stream with many
messages that are all small: sending them in batches saves the per-message cost.
"""

from __future__ import annotations

from typing import Any

COMBINE_MIN_MSGS = 64
"""A stream needs at least this many messages to be worth combining (below, savings are noise)."""
COMBINE_MAX_BYTES = 4096
"""Messages up to this size are 'small': their cost is dominated by the per-message overhead."""
BATCH = 8
"""Suggested batch: combine up to this many messages into one."""


def combine_candidates(streams: list[dict[str, Any]], *, min_msgs: int = COMBINE_MIN_MSGS,
                       max_bytes: int = COMBINE_MAX_BYTES) -> list[dict[str, Any]]:
    """Streams [{src_pe, dst_pe, entry, msgs, bytes, max_bytes}] worth combining, most messages first."""
    out = []
    for s in streams:
        if s["msgs"] >= min_msgs and (s.get("max_bytes") or 0) <= max_bytes and s["src_pe"] != s["dst_pe"]:
            out.append({"src_pe": int(s["src_pe"]), "dst_pe": int(s["dst_pe"]), "entry": str(s["entry"]),
                        "msgs": int(s["msgs"]), "mean_bytes": round(s["bytes"] / max(s["msgs"], 1), 1),
                        "max_bytes": int(s.get("max_bytes") or 0), "batch": BATCH})
    return sorted(out, key=lambda c: (-c["msgs"], c["src_pe"], c["dst_pe"], c["entry"]))


def saving_ns(candidates: list[dict[str, Any]], per_message_ns: float) -> float:
    """Per-message cost saved when each stream sends msgs/batch messages instead of msgs."""
    return sum((c["msgs"] - -(-c["msgs"] // c["batch"])) * per_message_ns for c in candidates)
