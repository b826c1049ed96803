"""Schedule hints: message priorities for the entry methods on the critical path.

Pure functions over plain data. Charm priorities: a lower number runs first; 0 is the default.
"""

from __future__ import annotations

from typing import Any

CRITICAL_SHARE_MIN = 0.05
"""An entry method gets a priority when it holds at least this share of the critical path's queue
delay (time its messages waited while the PE ran other work): that is what a priority removes."""
MAX_PRIORITIZED = 4
"""At most this many entry methods are raised: raising everything raises nothing."""
TOP_PRIO = -100
"""Priority of the most critical entry method; the next ones get TOP_PRIO + 10, + 20, ..."""


def priorities(critical: list[dict[str, Any]], *, min_share: float = CRITICAL_SHARE_MIN,
               limit: int = MAX_PRIORITIZED) -> list[dict[str, Any]]:
    """[{coll, entry, share, ...}] sorted by share -> [{coll, entry, prio, critical_share}]."""
    chosen = [c for c in sorted(critical, key=lambda c: (-c["share"], c["coll"] or "", c["entry"]))
              if c["share"] >= min_share][:limit]
    return [{"coll": c["coll"] or "", "entry": c["entry"], "prio": TOP_PRIO + 10 * k,
             "critical_share": round(float(c["share"]), 4)} for k, c in enumerate(chosen)]


def as_lookup(prios: list[dict[str, Any]]) -> dict[str, int]:
    """{"Coll#k.entry": prio} for the replay."""
    return {(f"{p['coll']}.{p['entry']}" if p["coll"] else p["entry"]): int(p["prio"]) for p in prios}
