"""Packed event rows and the two recorders that append them: native (C) and pure Python.

Keeping Python tuples costs more than making them (each row's ints are heap objects the
garbage collector walks, and a flush has to transpose them). A row is 18 int64 fields (strings
as codes into a per-PE string table, nulls as INT64_MIN, in LAYOUT order). The native recorder
(tracers/charm/_recorder.c) writes rows straight into a preallocated buffer; the Python one packs
a per-event head with `struct` plus the chare's pre-packed tail into a bytearray. Both take the
same calls and give the same bytes; the flush (tracers/charm/parts.py) turns them into Arrow
columns without touching single values from Python.
"""

from __future__ import annotations

import os
import struct
import sys

NULL = -(2**63)
"""Null marker for every packed field (no real time, id, index or code takes this value)."""

PACKED = ("kind", "pe", "t0", "t1", "active", "cat", "coll", "obj", "index", "name", "msg",
          "peer_pe", "peer_coll", "peer_obj", "bytes", "step", "args", "exec_t0")
"""Packed fields in `pack`'s argument order; the other schema columns are null (tid: 0)."""
LAYOUT = ("t0", "msg", "name", "pe", "peer_pe", "t1", "active", "peer_coll", "peer_obj", "bytes", "args",
          "kind", "cat", "coll", "obj", "index", "step", "exec_t0")
"""Storage order of a row. The hot rows (exec, send) are a packed head of per-event values followed
by a tail of what is fixed per chare and kind (kind, identity codes, step), packed once per object
(`tails`) and appended as bytes: per event ~7-11 int conversions instead of 17, and big-int NULL
conversions only where an event really has a null."""
ROW = struct.Struct("<" + "q" * len(LAYOUT))
EXEC_HEAD = struct.Struct("<7q").pack  # t0, msg, name, pe, peer_pe, t1, active
SEND_HEAD = struct.Struct("<11q").pack  # t0 .. args (t1, active: NULL)
ARRAY_SEND_HEAD = struct.Struct("<4q" + "7xB" * 3 + "4q").pack
"""SEND_HEAD of an array send: peer_pe, t1 and active are always null there, so they are packed as
their bytes (7 zero pad bytes + 0x80, little-endian INT64_MIN) from the small int NULL_HI; a
big-int NULL costs ~10 ns more per field to convert."""
NULL_HI = 0x80
EXEC_TAIL = struct.Struct("<11q").pack  # peer_coll, peer_obj, bytes, args (NULL), kind, cat, coll, obj, index, step, exec_t0
SEND_TAIL = struct.Struct("<7q").pack  # kind, cat, coll, obj, index, step, exec_t0 (NULL)



def pack(kind: int, pe: int, t0: int, t1: int, active: int, cat: int, coll: int, obj: int, index: int, name: int,
         msg: int, peer_pe: int, peer_coll: int, peer_obj: int, nbytes: int, step: int, args: int,
         exec_t0: int = NULL) -> bytes:
    """One row from fields in PACKED order (rare rows; the hot paths use the head/tail structs)."""
    return ROW.pack(t0, msg, name, pe, peer_pe, t1, active, peer_coll, peer_obj, nbytes, args, kind, cat, coll, obj,
                    index, step, exec_t0)


def tails(k_exec: int, k_send: int, cat: int, coll: int, obj: int, index: int, step: int) -> tuple[bytes, bytes]:
    """(exec tail, send tail) of a chare at a step: rebuilt only when its identity or step changes."""
    return (EXEC_TAIL(NULL, NULL, NULL, NULL, k_exec, cat, coll, obj, index, step, NULL),
            SEND_TAIL(k_send, cat, coll, obj, index, step, NULL))


assert ARRAY_SEND_HEAD(1, 2, 3, 4, NULL_HI, NULL_HI, NULL_HI, 5, 6, 7, 8) == SEND_HEAD(
    1, 2, 3, 4, NULL, NULL, NULL, 5, 6, 7, 8)

FLUSH_BYTES = ROW.size * 200_000
"""A full buffer: ~200 000 rows (~29 MB per PE), handed to the writer thread at the next return to
the scheduler. Like Projections' per-PE log (1 000 000 entries), a busy PE writes only when its
buffer is full or at the end (lifecycle.FLUSH_TICK_S: a quiet one also writes once a second)."""


class Strings:
    """String table of one PE: text <-> small int code (code of None is NULL)."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.codes: dict[str, int] = {}

    def code(self, text: str | None) -> int:
        if text is None:
            return NULL
        c = self.codes.get(text)
        if c is None:
            c = self.codes[text] = len(self.texts)
            self.texts.append(text)
        return c




XTAIL, STAIL = 7, 8
"""Fields of an identity record (tracers.charm.identity) holding its packed exec / send row tails."""
MSG_PE_SHIFT = 40
"""msg ids are (src_pe << 40) | per-PE sequence: unique over the run, PE recoverable."""
MSG_KEY, CREATE_KEY = 0, 1
"""Keys of the message header entries the tracer adds (msg id; collection name and category of a
creation): int keys, which charm4py's own (bytes) never equal, and which pickle and unpickle
~40 ns cheaper per message than a bytes key (no memo entry, no bytes object made)."""
FLUSH_ROWS = FLUSH_BYTES // ROW.size
ENV_SWITCH = "PARADISE_NATIVE_RECORDER"
"""Set to 0 to run the pure-Python recorder although the native one is built."""


class PyRecorder:
    """The pure-Python recorder: the native Recorder's calls, rows packed into a bytearray."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.origin = self.pe = self.depth = self.last = 0
        self.flush_rows = FLUSH_ROWS
        self.on_full = None
        self.end_t, self.end_len = 0, -1  # end of the last exec row and len(buf) just after it (-1: none)

    def __len__(self) -> int:
        return len(self.buf) // ROW.size

    def exec(self, t0: int, t1: int, active: int, mid: int, name: int, ident: list) -> None:
        o = self.origin
        self.buf += EXEC_HEAD(t0 - o, mid, name, self.pe, NULL if mid == NULL else mid >> MSG_PE_SHIFT, t1 - o, active)
        self.buf += ident[XTAIL]
        self.end_t, self.end_len = t1, len(self.buf)

    def send(self, t: int, mid: int, name: int, peer_pe: int, peer_coll: int, peer_obj: int, nbytes: int,
             args: int, ident: list) -> None:
        if peer_pe == NULL:
            self.buf += ARRAY_SEND_HEAD(t - self.origin, mid, name, self.pe, NULL_HI, NULL_HI, NULL_HI, peer_coll,
                                        peer_obj, nbytes, args)
        else:
            self.buf += SEND_HEAD(t - self.origin, mid, name, self.pe, peer_pe, NULL, NULL, peer_coll, peer_obj,
                                  nbytes, args)
        self.buf += ident[STAIL]

    def row(self, *fields: int) -> None:
        """Any row, fields in `pack`'s order."""
        self.buf += pack(*fields)

    def idle(self, t0: int, t1: int) -> None:
        o = self.origin
        self.buf += pack(2, self.pe, t0 - o, t1 - o, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                         NULL, NULL, NULL)

    def take(self) -> bytes:
        """The rows so far; recording goes on in the same (emptied) buffer."""
        data = bytes(self.buf)
        del self.buf[:]
        self.end_len = -1
        return data

    def clear(self) -> None:
        del self.buf[:]
        self.end_len = -1


def make_recorder() -> tuple[PyRecorder, str]:
    """(recorder, which one): the native one unless it is not built or PARADISE_NATIVE_RECORDER=0."""
    if os.environ.get(ENV_SWITCH, "1").strip() in ("0", "false", "no", "off"):
        return PyRecorder(), f"python ({ENV_SWITCH}=0)"
    try:
        from tracers.charm._recorder import CREATE_KEY as C_CREATE_KEY
        from tracers.charm._recorder import MSG_KEY as C_MSG_KEY
        from tracers.charm._recorder import ROW_FIELDS, Recorder, use_null
    except ImportError:
        return PyRecorder(), "python (native recorder not built)"
    assert ROW_FIELDS == len(LAYOUT) and (C_MSG_KEY, C_CREATE_KEY) == (MSG_KEY, CREATE_KEY)
    use_null(NULL)
    return Recorder(FLUSH_ROWS + FLUSH_ROWS // 8, FLUSH_ROWS), "native"


def say_recorder(kind: str) -> None:
    """The one line that says which recorder records this run."""
    print(f"paradise: charm tracer: {kind} recorder", file=sys.stderr, flush=True)
