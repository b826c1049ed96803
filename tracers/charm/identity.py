"""Stable object identity for charm4py runs: collection names that survive a rerun.

charm4py's array/group ids are runtime-assigned creation-order integers that shift when
anything (the tracer, a map group) creates a group first, so traces and mapping files key
objects on `coll` = chare class + '#' + creation ordinal among that class's collections,
plus the element index. Collections are named where they are created (arrays only on PE 0)
and the name travels to the other PEs in the creation message header.
"""

from __future__ import annotations

from paradise.format import index_text, pack_index

RUNTIME_CLASSES = frozenset(
    {"CharmRemote", "SectionManager", "PoolScheduler", "Worker", "ParadiseMap"}
)
"""charm4py-internal chare classes (and our map group): their rows get cat='runtime'."""

SKIP_CLASSES = frozenset({"_TracerGroup"})
"""The tracer's own group: never recorded."""

MAIN_COLL = "Main#0"
"""Collection name of charm4py's default mainchare (the `main` function's chare)."""

# Fields of an identity record (a list, mutable: step numbers change over the run).
COLL, OBJ, INDEX, CAT, STEP, EXPLICIT, SYNCS = range(7)


def new_ident(coll: str | None, index: tuple, cat: str | None) -> list:
    """An identity record: [coll, packed obj, index text, cat, step, explicit_step, syncs]."""
    if coll is None:
        return [None, None, None, cat, None, False, 0]
    return [coll, pack_index(index), index_text(index), cat, None, False, 0]


NO_OBJECT = new_ident(None, (), None)
"""Identity used for events outside any entry method (sends from the scheduler, startup)."""


class Registry:
    """Maps runtime ids (aid, gid) to stable collection names on one PE."""

    def __init__(self) -> None:
        self.arrays: dict[int, tuple[str, str]] = {}
        self.groups: dict[int, tuple[str, str]] = {}
        self._counters: dict[str, int] = {}
        self.main: tuple[str, str] = (MAIN_COLL, "mainchare")

    def new_name(self, cls_name: str, pe: int) -> str:
        """Next collection name of a class: 'Cell#0', 'Cell#1', ... ('Cell#3.0' if made on PE 3)."""
        n = self._counters.get(cls_name, 0)
        self._counters[cls_name] = n + 1
        return f"{cls_name}#{n}" if pe == 0 else f"{cls_name}#{pe}.{n}"

    @staticmethod
    def category(cls_name: str, cat: str) -> str:
        return "runtime" if cls_name in RUNTIME_CLASSES else cat

    def identify(self, obj, header: dict | None) -> list | None:
        """Identity record of a chare instance (None for the tracer's own group)."""
        cls_name = type(obj).__name__
        if cls_name in SKIP_CLASSES:
            return None
        proxy = obj.thisProxy
        created = header.get(b"_pc") if header else None
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
        coll, cat = ent
        return new_ident(coll, index, self.category(cls_name, cat))
