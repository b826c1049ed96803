"""Runtime consumer of comm.json for charm4py: message combining (TRAM-style aggregation).

The streams in comm.json's `combine` list (source PE, destination PE, entry method) are buffered on
the sending PE and sent as one message per batch to a per-PE receiver (the `Combiner` group), which
delivers them, in order, to the target elements' entry methods. Only point-to-point sends to array
elements and group members are combined; everything else takes the normal path.

When buffers are flushed, so nothing can deadlock or reorder within a stream:
* a stream's buffer holds `batch` messages: it is sent at once;
* control returns to the Charm++ scheduler (the end of every callback the scheduler makes into
  Python: message delivery, main chare, timers). A sending entry method that returns, and a
  threaded entry method that suspends on a future, both return to the scheduler there, so every
  buffered message is on its way before anything else can run on that PE;
* `charm.exit()` is called.
Batches carry a per-stream sequence number; the receiver delivers them in that order.

How a message is packed: in a run no tracer watches, a send to an array element on a listed stream
whose arguments are immutable scalars (int, float, str, bytes, bool, None, complex, tuples of
them) skips charm4py's header and pickle: the proxy call buffers (array, index, args) as they are,
a batch to another PE is pickled once, and a batch to this PE's own receiver is handed over
without pickling (charm4py's local-message slot), since nothing in it can change after the send.
Any other send on a stream (other arguments, keywords, a traced run, whose tracer records each
message's size as charm4py packs it) is packed by charm4py and travels in the same buffer, so
a stream's order holds whichever way its messages were packed.

The destination PE of an array element is where its array's map puts it (the ArrayMap group, or
charm4py's default block map from the array's bounds, which PE 0 broadcasts at creation). An element
that is not there (migrated, inserted elsewhere) gets its messages forwarded on the normal path.
Messages to arrays whose bounds are unknown and local-message-optimised sends are never combined;
messages to local elements are, when their (PE, PE, entry) stream is listed. Cost on the normal
path: one extra Python call per packed message, one dict lookup per send and one list check per
scheduler callback, and only in runs given a comm.json.
"""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path
from typing import Any

from hints.format import HintError
from hints.runtime.charm_map import default_pe
from hints.runtime.charm_unpickled import HEADER, direct_call, send_local, wrap_proxies

LOCAL_TAG = b"_local:"
"""charm4py's local-message optimisation: the payload stays in the target object, the message is a tag."""
class _Stream:
    """One (destination PE, entry method) buffer on the sending PE."""

    __slots__ = ("dst", "ep", "batch", "items", "seq")

    def __init__(self, dst: int, ep: int, batch: int) -> None:
        self.dst, self.ep, self.batch = dst, ep, batch
        self.items: list = []
        self.seq = 0


def parse_streams(path: Path, program: str | None, pes: int, entries: set[str]) -> list[dict[str, Any]]:
    """comm.json's streams, judged by the comm kind's one validation, then against this program:
    each entry method must exist."""
    from hints.kinds import KINDS

    streams = KINDS["comm"].load(path, program=program, pes=pes)
    for n, s in enumerate(streams):
        if s["entry"] not in entries:
            raise HintError(f"{path}: combine[{n}]: this program has no entry method {s['entry'][:80]!r}")
    return streams


_RECEIVER: list = []


def _receiver_class() -> type:
    """The Combiner group class, defined on first use so that importing this module needs no charm4py."""
    if _RECEIVER:
        return _RECEIVER[0]
    from charm4py import Chare, charm

    class Combiner(Chare):
        """Per-PE receiver: delivers each batch's messages in order; learns array placements."""

        def __init__(self) -> None:
            self.expect: dict[tuple[int, int], int] = {}
            self.stash: dict[tuple[int, int, int], list] = {}
            _ACTIVE[0].proxy = self.thisProxy

        def learn_array(self, aid: int, dims: tuple, map_gid: int) -> None:
            _ACTIVE[0].arrays[aid] = (dims, map_gid)

        def deliver(self, src: int, ep: int, seq: int, items: list) -> None:
            key = (src, ep)
            want = self.expect.get(key, 1)
            if seq != want:  # an earlier batch of this stream is still on its way
                self.stash[(src, ep, seq)] = items
                return
            run = _ACTIVE[0].run_items
            run(ep, items)
            want += 1
            while (src, ep, want) in self.stash:
                run(ep, self.stash.pop((src, ep, want)))
                want += 1
            self.expect[key] = want

    Combiner.__module__ = __name__
    _RECEIVER.append(Combiner)
    del charm
    return Combiner


_ACTIVE: list = [None]  # the CombineConsumer of this process


def _own(em: Any) -> bool:
    """An entry method of the combiner itself (`deliver`, `learn_array`): never combined, since a
    batch sent on a combined stream would be buffered into that stream again, without end."""
    return getattr(em.C, "__module__", None) == __name__


class CombineConsumer:
    """Loads comm.json on every PE once charm4py knows the PE (registerMainModule) and, when its
    streams check out, wraps the send and dispatch callables of the `charm` instance."""

    def __init__(self, path: Path, program: str, traced: bool = False) -> None:
        self.path, self.program, self.traced = Path(path), program, traced
        self.proxy: Any = None  # the Combiner group, set on each PE when its member is built
        self.arrays: dict[int, tuple] = {}  # aid -> (dims, map gid)
        self.streams: list[dict[str, Any]] = []
        self.pe = -1
        self.listed: dict[int, dict[int, _Stream]] = {}  # ep -> destination PE -> buffer (this PE's streams)

    def install(self, charm: Any, chare_mod: Any) -> None:
        """Must run before the program calls charm.start() and before a tracer wraps the sends, so
        that the tracer sees (and marks) every message the program sent. Without the file nothing
        is installed; the streams are read on each PE once charm4py knows the PE number."""
        if not self.path.exists():
            return
        _ACTIVE[0] = self
        orig_register, orig_internal = charm.registerMainModule, charm._createInternalChares

        def registerMainModule() -> None:
            orig_register()
            self._load(charm)
            self._listen(charm)

        def createInternalChares() -> None:  # PE 0 only, before the main chare
            orig_internal()
            if self.streams:
                from charm4py import Group

                self.proxy = Group(_receiver_class())

        charm.registerMainModule = registerMainModule
        charm._createInternalChares = createInternalChares
        self._wrap(charm, chare_mod)

    def register(self) -> None:
        """Registers the receiver group on this PE; after any tracer is installed (it instruments
        entry methods as they are registered), before charm.start()."""
        if _ACTIVE[0] is self:
            from charm4py import register

            register(_receiver_class())

    def _load(self, charm: Any) -> None:
        self.pe, pes = charm.myPe(), charm.numPes()
        names = {em.name for em in charm.entryMethods.values() if not _own(em)}
        try:
            self.streams = parse_streams(self.path, self.program, pes, names)
        except HintError as exc:
            if self.pe == 0:
                from hints.kinds import KINDS

                print(KINDS["comm"].refusal(exc), file=sys.stderr, flush=True)
            return
        if self.pe == 0 and self.streams:
            print(f"paradise: combining messages on {len(self.streams)} stream(s) from {self.path}",
                  file=sys.stderr, flush=True)

    def _listen(self, charm: Any) -> None:
        """Fills the send table with this PE's streams (by entry-method id)."""
        by_name: dict[str, list[int]] = {}
        for ep, em in charm.entryMethods.items():
            if not _own(em):
                by_name.setdefault(em.name, []).append(ep)
        for s in self.streams:
            if s["src_pe"] != self.pe:
                continue
            for ep in by_name[s["entry"]]:
                self.listed.setdefault(ep, {})[s["dst_pe"]] = _Stream(s["dst_pe"], ep, s["batch"])
        if not self.traced:
            self._wrap_proxies(charm)

    def _wrap(self, charm: Any, chare_mod: Any) -> None:
        """Send, pack, dispatch, exit and array-creation wrappers (see the module doc)."""
        listed = self.listed
        pending: list[_Stream] = []
        where: dict[tuple, int] = {}
        last: list = [None, None, None]  # args, header, payload of the last packed message
        real_pack, real_array, real_group = charm.packMsg, charm.CkArraySend, charm.CkGroupSend
        arrays = self.arrays

        def send(st: _Stream) -> None:
            items, st.items = st.items, []
            st.seq += 1
            if st.dst == self.pe and not self.traced and send_local(charm, self.proxy, self.pe, real_pack, real_group, (st.ep, st.seq, items)):
                return  # (traced, the batch goes the proxy's way, so the tracer records its send)
            self.proxy[st.dst].deliver(self.pe, st.ep, st.seq, items)

        def flush() -> None:
            while pending:
                st = pending.pop()
                if st.items:
                    send(st)

        def locate(aid: int, index: tuple) -> int | None:
            info = arrays.get(aid)
            if info is None:
                return None
            dims, map_gid = info
            if map_gid >= 0:
                m = charm.groups.get(map_gid)
                return None if m is None else int(m.procNum(index))
            return default_pe(index, dims, charm.numPes()) if dims and len(dims) == len(index) else None

        def place(aid: int, index: tuple) -> int | None:
            key = (aid, index)
            dst = where.get(key)
            if dst is None:
                dst = locate(aid, index)
                if dst is not None:
                    where[key] = dst
            return dst

        def add(st: _Stream, item: tuple) -> None:
            if not st.items:
                pending.append(st)
            st.items.append(item)
            if len(st.items) >= st.batch:
                send(st)

        self._place, self._add = place, add

        def buffered(st: _Stream, item: tuple, m0: bytes) -> bool:
            if m0[:7] == LOCAL_TAG or self.proxy is None:
                return False
            if last[2] is m0 and b"dcopy" in last[1]:
                args = last[0]  # direct-copy buffers are sent when the batch is: copied now, as at a send
                item = (*item, [copy.copy(args[d[0]]) for d in last[1][b"dcopy"]])
                real_pack(None, (), {b"_": 0})  # charm4py keeps direct-copy buffers for the next send: drop them
            add(st, item)
            return True

        def packMsg(destObj, msgArgs, header):
            msg = real_pack(destObj, msgArgs, header)
            last[0], last[1], last[2] = msgArgs, header, msg[0]
            return msg

        def CkArraySend(aid, index, ep, msg):
            by_dst = listed.get(ep)
            if by_dst is not None and index:
                st = by_dst.get(place(aid, index))
                if st is not None and buffered(st, (0, aid, index, ep, msg[0]), msg[0]):
                    return True
            return real_array(aid, index, ep, msg)

        def CkGroupSend(gid, index, ep, msg):
            by_dst = listed.get(ep)
            if by_dst is not None:
                st = by_dst.get(index)
                if st is not None and buffered(st, (1, gid, index, ep, msg[0]), msg[0]):
                    return True
            return real_group(gid, index, ep, msg)

        def run_items(ep: int, items: list) -> None:
            invoke, loads, elements = charm.invokeEntryMethod, pickle.loads, charm.arrays
            call = direct_call(charm, ep)
            for item in items:
                if len(item) == 3:  # (aid, index, args): buffered by the proxy, unpickled
                    aid, index, args = item
                    obj = elements[aid].get(index)
                    if obj is None:  # not here (migrated, or placed elsewhere): the normal path finds it
                        real_array(aid, index, ep, real_pack(None, list(args), dict(HEADER)))
                    elif call is not None:
                        call(obj, args)
                    else:
                        invoke(obj, ep, HEADER, args)
                    continue
                kind, cid, index, ep_, m0 = item[:5]
                header, args = loads(m0)
                if len(item) > 5:
                    for d, value in zip(header[b"dcopy"], item[5]):
                        args[d[0]] = value
                obj = elements[cid].get(index) if kind == 0 else charm.groups.get(cid)
                if obj is not None:
                    invoke(obj, ep_, header, args)
                    continue
                if len(item) > 5:
                    header = {k: v for k, v in header.items() if k != b"dcopy"}
                    m0 = pickle.dumps((header, args), charm.options.pickle_protocol)
                real_array(cid, index, ep_, (m0, None))

        self.run_items = run_items

        def after(fn):
            def dispatch(*a):
                fn(*a)
                if pending:
                    flush()

            return dispatch

        for name in ("recvArrayMsg", "recvGroupMsg", "recvChareMsg", "recvArrayBcast", "buildMainchare",
                     "triggerCallable"):
            setattr(charm, name, after(getattr(charm, name)))
        orig_exit = charm.exit

        def exit(exit_code=0):
            flush()
            return orig_exit(exit_code)

        charm.exit = exit
        charm.packMsg, charm.CkArraySend, charm.CkGroupSend = packMsg, CkArraySend, CkGroupSend
        self._wrap_array_creation(chare_mod)

    def _wrap_proxies(self, charm: Any) -> None:
        """The listed entries' array-proxy methods buffer unpickled (hints.runtime.charm_unpickled)."""
        wrap_proxies(charm, self.listed, self._place, self._add, lambda: self.proxy is not None)

    def _wrap_array_creation(self, chare_mod: Any) -> None:
        """PE 0 tells every receiver the bounds and map of each new array (placement for `locate`)."""
        Array = chare_mod.Array
        orig_new = Array.__new__

        def array_new(cls, C, dims=None, ndims=-1, args=[], map=None, useAtSync=False):  # noqa: B006
            proxy = orig_new(cls, C, dims, ndims, args, map, useAtSync)
            shape = None if dims is None else ((dims,) if isinstance(dims, int) else tuple(dims))
            map_gid = -1 if map is None else map.gid
            if (shape and sum(shape) > 0) or map_gid >= 0:
                self.arrays[proxy.aid] = (shape, map_gid)
                if self.proxy is not None:
                    self.proxy.learn_array(proxy.aid, shape, map_gid)
            return proxy

        Array.__new__ = staticmethod(array_new)


__all__ = ["CombineConsumer", "parse_streams"]
