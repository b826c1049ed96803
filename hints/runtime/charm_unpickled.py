"""The combiner's unpickled packing (hints.runtime.charm_combine's module doc, "How a message is
packed"): which sends may travel unpickled, the array-proxy methods that buffer them, the hand-over
of a batch to the PE's own receiver, and the direct call of a plain entry method on delivery."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCALARS = frozenset({int, float, str, bytes, bool, type(None), complex})
"""Argument types a buffered message may hold by reference: no later change can reach them."""
HEADER: dict = {"is_ray": False}
"""The header charm4py's array proxy gives a plain send (no future, no broadcast)."""


def immutable(args: tuple) -> bool:
    """Whether every argument is a scalar of SCALARS or a tuple of such (so needs no copy at send)."""
    for a in args:
        t = type(a)
        if t not in SCALARS and not (t is tuple and immutable(a)):
            return False
    return True


def direct_call(charm: Any, ep: int) -> Callable[[Any, tuple], None] | None:
    """For an entry method charm4py runs as a plain call (not threaded, no `when` condition, no
    profiling): a call (obj, args) doing what its EntryMethod._run does for a message without a
    future, minus the per-message lookups; None for any other (its items go through
    invokeEntryMethod)."""
    em = charm.entryMethods[ep]
    if em.when_cond is not None or getattr(em.run, "__func__", None) is not type(em)._run:
        return None
    name, flush = em.name, charm.options.auto_flush_wait_queues

    def call(obj: Any, args: tuple) -> None:
        charm.last_em_exec = em
        try:
            getattr(obj, name)(*args)
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
            if not isinstance(code, int):
                print(code)
                code = 1
            charm.exit(code)
        except Exception as exc:
            charm.process_em_exc(exc, obj, HEADER)
            return
        if flush and obj._cond_next is not None:
            obj.__flush_wait_queues__()

    return call


def send_local(charm: Any, receiver: Any, pe: int, real_pack: Any, real_group: Any, batch: tuple) -> bool:
    """A batch (ep, seq, items) to this PE's own receiver (the Combiner group `receiver`), handed
    over unpickled in charm4py's local-message slot (its items are immutable or packed already);
    False when the receiver has no free slot."""
    member = charm.groups.get(receiver.gid)
    if member is None or member._local_free_head is None:
        return False
    deliver = type(receiver).deliver.ep
    real_group(receiver.gid, pe, deliver, real_pack(member, (pe, *batch), {}))
    return True


def wrap_proxies(charm: Any, listed: dict[int, dict[int, Any]], place: Callable, add: Callable,
                 ready: Callable[[], bool]) -> None:
    """The array proxies' methods of the listed entries (ep -> destination PE -> stream) buffer
    (aid, index, args) themselves, through `place` (the element's PE) and `add` (into a stream),
    when the receivers are `ready` and the args immutable; any other call goes to charm4py's method."""
    from charm4py.chare import ARRAY

    proxies = charm.proxyClasses[ARRAY]
    for ep, by_dst in listed.items():
        em = charm.entryMethods[ep]
        cls = proxies.get(em.C)
        if cls is not None and callable(getattr(cls, em.name, None)):
            setattr(cls, em.name, _buffering(getattr(cls, em.name), by_dst, place, add, ready))


def _buffering(orig: Any, by_dst: dict[int, Any], place: Callable, add: Callable, ready: Callable[[], bool]) -> Any:
    def proxy_entry_method(proxy, *args, **kwargs):
        index = proxy.elemIdx
        if index and not kwargs and not proxy.issec and ready():
            aid = proxy.aid
            st = by_dst.get(place(aid, index))
            if st is not None and immutable(args):
                add(st, (aid, index, args))
                return None
        return orig(proxy, *args, **kwargs)

    proxy_entry_method.ep = orig.ep
    proxy_entry_method.__name__, proxy_entry_method.__qualname__ = orig.__name__, orig.__qualname__
    return proxy_entry_method
