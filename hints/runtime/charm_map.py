"""Runtime consumer of mapping.json for charm4py: an ArrayMap that places elements as told.

Used automatically by `paradise trace charm --hints DIR` / PARADISE_HINTS=DIR (the bootstrap
passes `map=` when an array the mapping names is created). `procNum` is on the message hot
path (charm4py asks the map on every send to an element whose location is not cached), so
it is bound to a dict's `__getitem__`; elements the file does not name fall back to the
placement charm4py would have used (balanced blocks over the row-major index).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

from hints.format import HintError, index_tuple


def default_pe(index: tuple, dims: tuple | None, pes: int) -> int:
    """charm4py 1.1's default placement (seen): balanced contiguous blocks of the row-major
    index when the array bounds are known, round-robin on the first index otherwise."""
    if dims:
        flat = 0
        for i, d in zip(index, dims):
            flat = flat * d + i
        base, rem = divmod(math.prod(dims), pes)
        big = base + 1
        if flat < rem * big:
            return flat // big
        return rem + (flat - rem * big) // max(base, 1)
    return int(index[0]) % pes if len(index) == 1 else sum(index) % pes


class _Table(dict):
    """index tuple -> PE; a missing index gets the default placement, with one warning."""

    def __init__(self, entries: dict, dims: tuple | None, pes: int, label: str, warn_pe: int) -> None:
        super().__init__(entries)
        self.dims, self.pes, self.label, self.warn_pe = dims, pes, label, warn_pe
        self.warned = False

    def __missing__(self, index):
        pe = default_pe(index, self.dims, self.pes)
        if not self.warned and self.warn_pe:
            self.warned = True
            print(f"paradise: warning: {self.label}: element {list(index)} is not in the mapping; "
                  "elements not named use the default map", file=sys.stderr, flush=True)
        self[index] = pe
        return pe


_MAP_CLASS: list = []


def _map_class() -> type:
    """ParadiseMap, defined on first use so that importing this module needs no charm4py."""
    if _MAP_CLASS:
        return _MAP_CLASS[0]
    from charm4py import ArrayMap, charm

    class ParadiseMap(ArrayMap):
        """ArrayMap over a {index tuple: PE} table (args are pickled and sent to every PE)."""

        def __init__(self, entries: dict, dims: tuple | None, pes: int, label: str, warn_dynamic: bool):
            super().__init__()
            table = _Table(entries, dims, pes, label, warn_dynamic and charm.myPe() == 0)
            self.procNum = table.__getitem__  # instance attribute: one C-level dict lookup per call

        def procNum(self, index):  # replaced per instance in __init__
            raise NotImplementedError

    ParadiseMap.__module__ = __name__
    _MAP_CLASS.append(ParadiseMap)
    return ParadiseMap


def __getattr__(name: str) -> Any:
    if name == "ParadiseMap":
        return _map_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_mapping(path: Path, program: str | None, pes: int) -> dict[str, dict[tuple, int]]:
    """mapping.json as {coll: {index tuple: pe}}, judged by the mapping kind's one validation."""
    from hints.kinds import KINDS

    colls = KINDS["mapping"].load(path, program=program, pes=pes)
    return {coll: {index_tuple(key): pe for key, pe in entries.items()} for coll, entries in colls.items()}


class MappingConsumer:
    """Loads and checks mapping.json once (on PE 0, where arrays are created) and builds maps."""

    def __init__(self, path: Path, program: str) -> None:
        self.path = Path(path)
        self.program = program
        self.table: dict[str, dict[tuple, int]] | None = None
        self.loaded = False

    @staticmethod
    def register(charm) -> None:
        """ParadiseMap must be registered on every PE before charm.start()."""
        from charm4py import register

        register(_map_class())

    def _refuse(self, exc: HintError) -> None:
        from hints.kinds import KINDS

        print(KINDS["mapping"].refusal(exc), file=sys.stderr, flush=True)

    def _load(self, pes: int) -> None:
        self.loaded = True
        if not os.path.lexists(self.path):
            print(f"paradise: no mapping in {self.path.parent}; using the default map", file=sys.stderr, flush=True)
            return
        try:
            self.table = parse_mapping(self.path, self.program, pes)
        except HintError as exc:
            self._refuse(exc)

    def map_for(self, coll: str, dims) -> Any:
        """A ParadiseMap group for collection `coll`, or None to keep charm4py's default map."""
        from charm4py import Group, charm

        pes = charm.numPes()
        if not self.loaded:
            self._load(pes)
        if not self.table or coll not in self.table:
            return None
        entries = self.table[coll]
        shape = None if dims is None else ((dims,) if isinstance(dims, int) else tuple(dims))
        if shape is not None and sum(shape) == 0:
            shape = None
        if shape is not None:
            bad = [k for k in entries if len(k) != len(shape) or any(not 0 <= i < d for i, d in zip(k, shape))]
            if bad:
                self._refuse(HintError(f"{self.path}: collection {coll!r} has no element {list(bad[0])} "
                                       f"(the array is {'x'.join(map(str, shape))})"))
                return None
            missing = math.prod(shape) - len(entries)
            if missing > 0:
                print(f"paradise: warning: {self.path}: {missing} of {math.prod(shape)} elements of {coll!r} "
                      "are not in the mapping; they use the default map", file=sys.stderr, flush=True)
        label = f"{self.path}: {coll!r}"
        return Group(_map_class(), args=[entries, shape, pes, label, shape is None])
