"""Stage-1 results shared by the analyses of one `paradise analyze` run.

Several analyses need the same data (the exec arrays and communication_edges for placement,
communication and scheduling; the lean exec graph for communication's latency fit and for
scheduling). On a 10-million-row trace each costs seconds, so the first caller's result is
kept for the engine's lifetime (a WeakKeyDictionary: closing and dropping the engine frees it).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

_CACHE: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def cached(engine: Any, key: str, make: Callable[[], Any]) -> Any:
    """make() once per (engine, key); engines that cannot be weakly referenced are not cached."""
    try:
        store = _CACHE.setdefault(engine, {})
    except TypeError:
        return make()
    if key not in store:
        store[key] = make()
    return store[key]

