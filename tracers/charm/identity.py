"""Stable object identity for charm4py runs: collection names that survive a rerun.

charm4py's array/group ids are runtime-assigned creation-order integers that shift when
anything (the tracer, a map group) creates a group first, so traces and mapping files key
objects on `coll` = chare class + '#' + creation ordinal among that class's collections,
plus the element index. Collections are named where they are created (arrays only on PE 0)
and the name travels to the other PEs in the creation message header.
"""

from __future__ import annotations

import weakref

from paradise.format import index_text, pack_index
from tracers.charm import rowbuf
from tracers.charm.rowbuf import NULL, Strings, tails

RUNTIME_MODULES = ("charm4py", "hints.runtime")
"""Chare classes defined in these modules (charm4py's CharmRemote, SectionManager, pool
Worker/PoolScheduler, and our map group) are runtime machinery: their rows get cat='runtime'."""

SKIP_CLASSES = frozenset({"_TracerGroup"})
"""The tracer's own group: never recorded."""

MAIN_COLL = "Main#0"
"""Collection name of charm4py's default mainchare (the `main` function's chare)."""

# Fields of an identity record (a list, mutable: step numbers change over the run). Strings
# are held as codes of the PE's string table and nulls as NULL, ready for packed rows.
# XTAIL / STAIL: the packed exec / send row tails (rowbuf.tails) of this identity at its step.
COLL, OBJ, INDEX, CAT, STEP, EXPLICIT, SYNCS, XTAIL, STAIL = range(9)
assert (XTAIL, STAIL) == (rowbuf.XTAIL, rowbuf.STAIL)
K_EXEC, K_SEND = 0, 1
"""String codes of the kinds 'exec' and 'send' (the string table is seeded with the kind names)."""


def record(coll: int, obj: int, index: int, cat: int, step: int, explicit: bool, syncs: int) -> list:
    """A new identity record, with its packed row tails."""
    return [coll, obj, index, cat, step, explicit, syncs, *tails(K_EXEC, K_SEND, cat, coll, obj, index, step)]


def set_step(ident: list, step: int) -> None:
    """Changes the step of an identity (and so its packed row tails)."""
    ident[STEP] = step
    ident[XTAIL], ident[STAIL] = tails(K_EXEC, K_SEND, ident[CAT], ident[COLL], ident[OBJ], ident[INDEX], step)


NO_OBJECT = record(NULL, NULL, NULL, NULL, NULL, False, 0)
"""Identity used for events outside any entry method (sends from the scheduler, startup)."""


class _Held:
    """A strong reference called like a weak one (objects that take no weak reference)."""

    __slots__ = ("obj",)

    def __init__(self, obj) -> None:
        self.obj = obj

    def __call__(self):
        return self.obj


class Registry:
    """Maps runtime ids (aid, gid) to stable collection names on one PE."""

    def __init__(self, strings: Strings) -> None:
        self.strings = strings
        self.arrays: dict[int, tuple[str, str]] = {}
        self.groups: dict[int, tuple[str, str]] = {}
        self._counters: dict[str, int] = {}
        self.main: tuple[str, str] = (MAIN_COLL, "mainchare")
        self.ids: dict[int, tuple] = {}
        """id(chare) -> (weak reference to it, its identity record). Kept beside the chare, never on
        it: an attribute added after __init__ turns CPython's inline instance values into a dict, and
        every `self.x` of the program's entry methods then misses the interpreter's attribute caches."""

    def ident_of(self, obj) -> list | None:
        """Identity record remembered for a chare (None: not seen on this PE yet)."""
        e = self.ids.get(id(obj))
        return e[1] if e is not None and e[0]() is obj else None

    def remember(self, obj, ident: list | None) -> None:
        """Keeps a chare's identity until it leaves the PE (carry) or is freed."""
        key, ids = id(obj), self.ids
        try:
            ref = weakref.ref(obj, lambda _r: ids.pop(key, None))
        except TypeError:  # no weak references (__slots__): held, as the compiled hook's cache holds chares
            ref = _Held(obj)
        ids[key] = (ref, ident)

    def drop(self, obj) -> list | None:
        """Forgets a chare's identity; returns it (None when there was none)."""
        ident = self.ident_of(obj)
        if ident is not None:
            del self.ids[id(obj)]
        return ident

    def new_name(self, cls_name: str, pe: int) -> str:
        """Next collection name of a class: 'Cell#0', 'Cell#1', ... ('Cell#3.0' if made on PE 3)."""
        n = self._counters.get(cls_name, 0)
        self._counters[cls_name] = n + 1
        return f"{cls_name}#{n}" if pe == 0 else f"{cls_name}#{pe}.{n}"

    @staticmethod
    def category(cls: type, cat: str) -> str:
        return "runtime" if cls.__module__.startswith(RUNTIME_MODULES) else cat

    def identify(self, obj, header: dict | None) -> list | None:
        """Identity record of a chare instance (None for the tracer's own group)."""
        cls_name = type(obj).__name__
        if cls_name in SKIP_CLASSES:
            return None
        carried = getattr(obj, "_pt_carry", None)
        if carried is not None:
            del obj._pt_carry  # migrated in: codes are per PE, so the texts travelled
            coll, index, cat, step, explicit, syncs = carried
            code = self.strings.code
            return record(code(coll), pack_index(index), code(index_text(index)), code(cat), step, explicit, syncs)
        proxy = obj.thisProxy
        created = header.get(rowbuf.CREATE_KEY) if header else None
        if hasattr(proxy, "aid"):
            aid = proxy.aid
            ent = self.arrays.get(aid)
            if ent is None:
                ent = tuple(created) if created else (f"{cls_name}#aid{aid}", "array")
                self.arrays[aid] = ent
            index = tuple(obj.thisIndex)
        elif hasattr(proxy, "gid"):
            gid = proxy.gid
            ent = self.groups.get(gid)
            if ent is None:
                ent = tuple(created) if created else (f"{cls_name}#gid{gid}", "group")
                self.groups[gid] = ent
            index = (int(obj.thisIndex),)
        else:
            ent = self.main if cls_name == "DefaultMainchare" else (f"{cls_name}#0", "mainchare")
            index = (0,)
        code = self.strings.code
        return record(code(ent[0]), pack_index(index), code(index_text(index)),
                      code(self.category(type(obj), ent[1])), NULL, False, 0)

    def carry(self, obj) -> None:
        """Before an element migrates: replace its identity codes by texts that mean the same anywhere."""
        ident = self.drop(obj)
        if ident is None:
            return
        texts = self.strings.texts
        obj._pt_carry = (texts[ident[COLL]], tuple(obj.thisIndex), texts[ident[CAT]], ident[STEP], ident[EXPLICIT],
                         ident[SYNCS])

    def coll_code(self, table: dict, rid: int) -> int:
        """Code of the collection name of an aid/gid (NULL when this PE never learned it)."""
        ent = table.get(rid)
        return NULL if ent is None else self.strings.code(ent[0])
