"""Stage-1 results shared by the analyses of one `paradise analyze` run.

Several analyses need the same data (the exec arrays and communication_edges for placement,
communication and scheduling; the lean exec graph for communication's latency fit and for
scheduling). On a 10-million-row trace each costs seconds, so the first caller's result is
kept for the engine's lifetime (a WeakKeyDictionary: closing and dropping the engine frees it).

Analyses may run in threads (paradise.analyses.runner runs them two at a time, and prefetch()
builds a result ahead of its first caller): each key is made once, later callers wait for that
result (or get its exception).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

_CACHE: weakref.WeakKeyDictionary[Any, dict[str, Future]] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def _claim(engine: Any, key: str) -> tuple[Future | None, bool]:
    """(the key's future, whether this caller must make it); (None, True) when the engine
    cannot be weakly referenced (nothing is cached)."""
    with _LOCK:
        try:
            store = _CACHE.setdefault(engine, {})
        except TypeError:
            return None, True
        fut = store.get(key)
        if fut is not None:
            return fut, False
        fut = store[key] = Future()
        return fut, True


def _make_into(fut: Future, make: Callable[[], Any]) -> None:
    try:
        fut.set_result(make())
    except BaseException as exc:  # kept for every caller of the key
        fut.set_exception(exc)


def cached(engine: Any, key: str, make: Callable[[], Any]) -> Any:
    """make() once per (engine, key); engines that cannot be weakly referenced are not cached."""
    fut, mine = _claim(engine, key)
    if fut is None:
        return make()
    if mine:
        _make_into(fut, make)
    return fut.result()


def prefetch(engine: Any, key: str, make: Callable[[], Any]) -> None:
    """Claims the key now and makes it in a daemon thread, unless it is made or being made:
    numpy releases the GIL in its array loops, so the result is built on the other core while
    the caller goes on; callers of cached() wait for it. Its exception, if any, reaches them."""
    fut, mine = _claim(engine, key)
    if fut is not None and mine:
        threading.Thread(target=_make_into, args=(fut, make), name=f"paradise-prefetch-{key}", daemon=True).start()


def claimed(engine: Any, key: str) -> bool:
    """Whether the key is made or being made (a caller may prefer it to a query of its own)."""
    with _LOCK:
        try:
            return key in _CACHE.get(engine, {})
        except TypeError:
            return False


def settle(engine: Any) -> None:
    """Waits for every result of `engine` still being made (prefetches nobody asked for yet), so
    the engine is not closed under a query that a prefetch thread is running."""
    with _LOCK:
        try:
            pending = list(_CACHE.get(engine, {}).values())
        except TypeError:
            return
    for fut in pending:
        fut.exception()  # waits; a failure was already kept for its callers
