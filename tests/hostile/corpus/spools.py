"""Raw row spools (paradise.format.spool) that a reader converts: damaged ones are refused in one
line naming the spool, and nothing is written; a killed writer's torn last record is dropped."""

from __future__ import annotations

import struct
from pathlib import Path

from paradise.format.spool import HEAD, META, NULL, ROWS, STRS, TUPL, head_payload, json_payload, record
from tests.hostile.case import case

ITEM = "extra"
COLUMNS = ("kind", "pe", "t0", "t1", "name")  # the required columns and a string one
SPOOL = "t/pe-00000.rows"
META_OK = {"source": "charm4py", "program": "p", "pes": 1, "pe": 0}


def _rows(*rows: tuple[int, ...]) -> bytes:
    return b"".join(struct.pack("<5q", *r) for r in rows)


def _records(*recs: tuple[bytes, bytes]) -> bytes:
    return b"".join(record(tag, payload) + payload for tag, payload in recs)


GOOD = ((HEAD, head_payload(COLUMNS, {"tid": 0}, META_OK)), (STRS, json_payload(["exec", "work"])),
        (ROWS, _rows((0, 0, 10, 20, 1), (0, 0, 30, 40, 1))))


def _spool(data: bytes):
    def build(d: Path) -> None:
        (d / "t").mkdir(parents=True, exist_ok=True)
        (d / SPOOL).write_bytes(data)

    return build


BAD = {
    "spool-garbage": b"this is not a spool at all, but long enough",
    "spool-no-header": _records(*GOOD[1:]),
    "spool-header-not-json": _records((HEAD, b"{nope"), *GOOD[1:]),
    "spool-version": _records((HEAD, json_payload({"spool": 99, "columns": list(COLUMNS), "null": NULL,
                                                   "metadata": META_OK})), *GOOD[1:]),
    "spool-unknown-column": _records((HEAD, head_payload(("kind", "t0", "nonsense"), {}, META_OK)), *GOOD[1:]),
    "spool-no-t0-column": _records((HEAD, head_payload(("kind", "pe", "t1", "name", "msg"), {}, META_OK)), *GOOD[1:]),
    "spool-rows-not-whole": _records(*GOOD[:2], (ROWS, _rows((0, 0, 10, 20, 1))[:-8])),
    "spool-code-never-written": _records(*GOOD[:2], (ROWS, _rows((7, 0, 10, 20, 1)))),
    "spool-strings-not-json": _records(GOOD[0], (STRS, b"[\xff"), GOOD[2]),
    "spool-unknown-record": _records(*GOOD) + b"JUNK" + bytes(4) + struct.pack("<Q", 3) + b"abc" + _records(GOOD[2]),
    "spool-tuple-row-misfit": _records(*GOOD, (TUPL, json_payload([["exec", "not a pe"]]))),
    "spool-metadata-unknown-key": _records(*GOOD, (META, json_payload({"favourite": 1}))),
}

for cid, data in BAD.items():
    case(f"{cid}-info", "info", "t", setup=_spool(data), mention=SPOOL, item=ITEM)

case("spool-torn-tail-info", "info", "t", setup=_spool(_records(*GOOD) + record(ROWS, bytes(400)) + bytes(40)),
     rc=(0,), outputs=("t",), gone=(SPOOL,), stdout_has=("did not finish",), item=ITEM)
case("spool-named-directly-info", "info", SPOOL, setup=_spool(_records(*GOOD)), rc=(0,), outputs=("t",),
     gone=(SPOOL,), item=ITEM)
