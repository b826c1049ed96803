"""Projections' tachyon-shift file: per-PE clock corrections saved by its timeline tool.

Projections (not Charm++) writes `tachyonShifts.dat` into the log folder when a user removes
tachyons (messages that arrive before they were sent) in the timeline view. The file is a
Java-serialised `java.util.TreeMap<Integer, Long>`: PE -> µs added to every timestamp of that
PE's log (projections/analysis/TachyonShifts.java, applied in GenericLogReader).
"""

from __future__ import annotations

import struct
from pathlib import Path

from paradise.errors import ImportFormatError


def read_tachyon_shifts(folder: Path) -> dict[int, int]:
    """Per-PE clock shifts (µs) from `tachyonShifts.dat` in FOLDER, or {} when there is none."""
    path = folder / "tachyonShifts.dat"
    if not path.exists():
        return {}
    try:
        values = _JavaStream(path.read_bytes()).treemap()
    except (ValueError, IndexError, struct.error) as exc:
        raise ImportFormatError(f"{path}: not a Projections tachyon-shift file ({exc})") from exc
    return {int(k): int(v) for k, v in values.items()}


class _JavaStream:
    """Just enough of Java object serialisation to read a TreeMap<Integer, Long>."""

    def __init__(self, data: bytes) -> None:
        if data[:4] != b"\xac\xed\x00\x05":
            raise ValueError("no Java serialisation header")
        self.d, self.i, self.handles = data, 4, []

    def _take(self, n: int) -> bytes:
        if self.i + n > len(self.d):
            raise ValueError("stream ends early")
        b = self.d[self.i: self.i + n]
        self.i += n
        return b

    def _u(self, fmt: str) -> int:
        return struct.unpack(">" + fmt, self._take(struct.calcsize(fmt)))[0]

    def _utf(self) -> str:
        return self._take(self._u("H")).decode("utf-8")

    def _classdesc(self) -> dict | None:
        tag = self._u("B")
        if tag == 0x70:  # TC_NULL
            return None
        if tag == 0x71:  # TC_REFERENCE
            return self.handles[self._u("I") - 0x7E0000]
        if tag != 0x72:
            raise ValueError(f"unexpected class descriptor tag {tag:#x}")
        desc: dict = {"name": self._utf()}
        self._take(8)  # serialVersionUID
        self.handles.append(desc)
        desc["flags"] = self._u("B")
        desc["fields"] = []
        for _ in range(self._u("H")):
            code = chr(self._u("B"))
            name = self._utf()
            if code in "L[":
                self._object()  # the field's type name (a string or a reference)
            desc["fields"].append((code, name))
        if self._u("B") != 0x78:  # class annotation must be empty
            raise ValueError("class annotations are not supported")
        desc["super"] = self._classdesc()
        return desc

    def _object(self) -> object:
        tag = self._u("B")
        if tag == 0x70:
            return None
        if tag == 0x71:
            return self.handles[self._u("I") - 0x7E0000]
        if tag == 0x74:  # TC_STRING
            s = self._utf()
            self.handles.append(s)
            return s
        if tag != 0x73:
            raise ValueError(f"unexpected object tag {tag:#x}")
        desc = self._classdesc()
        slot = len(self.handles)
        self.handles.append(None)
        chain = []
        while desc is not None:
            chain.append(desc)
            desc = desc["super"]
        values: dict = {}
        for d in reversed(chain):
            for code, name in d["fields"]:
                values[name] = self._value(code)
        if chain and chain[0]["name"] in ("java.lang.Integer", "java.lang.Long"):
            obj: object = values["value"]
        else:
            obj = {"class": chain[0]["name"] if chain else None, **values}
        self.handles[slot] = obj
        return obj

    def _value(self, code: str) -> object:
        fmt = {"I": "i", "J": "q", "S": "h", "B": "b", "Z": "?", "C": "H", "F": "f", "D": "d"}.get(code)
        return self._u(fmt) if fmt else self._object()

    def treemap(self) -> dict:
        if self._u("B") != 0x73:
            raise ValueError("no object")
        desc = self._classdesc()
        if desc is None or desc["name"] != "java.util.TreeMap":
            raise ValueError("not a java.util.TreeMap")
        self.handles.append(None)
        for code, _name in desc["fields"]:
            self._value(code)  # the comparator (null)
        if self._u("B") != 0x77:  # TC_BLOCKDATA holding the size
            raise ValueError("no TreeMap size block")
        block = self._take(self._u("B"))
        size = struct.unpack(">i", block[:4])[0]
        out = {}
        for _ in range(size):
            key = self._object()
            out[key] = self._object()
        return out
