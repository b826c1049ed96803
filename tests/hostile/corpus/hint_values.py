"""Hint values no runtime could use (issue 23, item 3): every field of every hint kind that
`whatif` and `report --hints` read, given NaN, infinity, a huge value, a negative one, the wrong
JSON type and text, is refused in one line naming the file, exit 2 (hints.kinds: the validation
the next run's consumer applies). A valid file of each kind is accepted first, so each refusal
is the field's doing."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.hostile import make
from tests.hostile.case import case
from tests.hostile.corpus.hints import _schedule as _hostile_schedule

NAN, INF = float("nan"), float("inf")
PROV = {"trace_fingerprint": None, "program": "stencil", "pes": 2, "source": "synthetic"}
BASE = {
    "mapping": {"format": "paradise-hints/1", "kind": "mapping", "provenance": PROV, "justified_by": [],
                "predicted_gain": {}, "strategy": "greedy", "pes": 2,
                "collections": {"Cell#0": {"[0]": 1, "[1]": 0}}},
    "schedule": {"format": "paradise-hints/1", "kind": "schedule", "provenance": PROV, "justified_by": [],
                 "predicted_gain": {}, "default_prio": 0,
                 "priorities": [{"coll": "Cell#0", "entry": "compute", "prio": -100, "critical_share": 0.5}]},
    "comm": {"format": "paradise-hints/1", "kind": "comm", "provenance": PROV, "justified_by": [],
             "predicted_gain": {}, "threshold": {"min_msgs": 64, "max_bytes": 4096, "batch": 8},
             "combine": [{"src_pe": 0, "dst_pe": 1, "entry": "compute", "msgs": 100, "mean_bytes": 10.5,
                          "max_bytes": 20, "batch": 8}],
             "ddp": {"bucket_cap_mb": 25.0, "verdict": "ok"}},
}
WRONG_TYPE = {"list": [1], "object": {"a": 1}, "bool": True}
PE_BAD = {"nan": NAN, "inf": INF, "neg-inf": -INF, "huge": 2**64, "int64": 2**63, "neg": -1, "beyond": 2,
          "frac": 0.9, "float": 1.0, "text": "1", **WRONG_TYPE}
COUNT_BAD = {"nan": NAN, "inf": INF, "huge": 2**64, "neg": -1, "frac": 0.5, "text": "8", **WRONG_TYPE}
BATCH_BAD = {**COUNT_BAD, "int64": 2**63, "one": 1, "zero": 0, "big": 2**17}
PRIO_BAD = {"nan": NAN, "inf": INF, "neg-inf": -INF, "huge": 2**31, "neg-huge": -(2**31) - 1, "frac": 0.5,
            "text": "-100", **WRONG_TYPE}
SHARE_BAD = {"nan": NAN, "inf": INF, "neg": -0.1, "huge": 1e308, "above-one": 1.5, "text": "0.5", **WRONG_TYPE}
BYTES_BAD = {"nan": NAN, "inf": INF, "neg-inf": -INF, "huge": 1e308, "neg": -1.0, "text": "10", **WRONG_TYPE}
CAP_BAD = {"nan": NAN, "inf": INF, "e308": 1e308, "e13": 1e13, "neg": -1.0, "zero": 0, "text": "25",
           **WRONG_TYPE}
TEXT_BAD = {"number": 8, "nan": NAN, "null": None, "huge": "x" * 5000, **WRONG_TYPE}


def _at(*path: Any) -> Callable[[dict, Any], None]:
    def put(doc: dict, value: Any) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return put


FIELDS: dict[str, list[tuple[str, Callable[[dict, Any], None], dict[str, Any]]]] = {
    "mapping": [
        ("pe", _at("collections", "Cell#0", "[0]"), PE_BAD),
        ("pes", _at("pes"), {k: v for k, v in PE_BAD.items() if k not in ("beyond",)} | {"zero": 0}),
        ("strategy", _at("strategy"), TEXT_BAD),
        ("collections", _at("collections"), {"text": "Cell", "list": [1], "null": None, "number": 1}),
        ("collection", _at("collections", "Cell#0"), {"text": "x", "list": [1], "null": None, "number": 1}),
    ],
    "schedule": [
        ("prio", _at("priorities", 0, "prio"), PRIO_BAD),
        ("default-prio", _at("default_prio"), PRIO_BAD),
        ("entry", _at("priorities", 0, "entry"), TEXT_BAD | {"empty": ""}),
        ("coll", _at("priorities", 0, "coll"), {k: v for k, v in TEXT_BAD.items() if k != "null"}),
        ("critical-share", _at("priorities", 0, "critical_share"), SHARE_BAD),
        ("priorities", _at("priorities"), {"text": "a", "object": {}, "null": None, "number": 1}),
    ],
    "comm": [
        ("src-pe", _at("combine", 0, "src_pe"), PE_BAD),
        ("dst-pe", _at("combine", 0, "dst_pe"), PE_BAD),
        ("batch", _at("combine", 0, "batch"), BATCH_BAD),
        ("msgs", _at("combine", 0, "msgs"), COUNT_BAD),
        ("max-bytes", _at("combine", 0, "max_bytes"), COUNT_BAD),
        ("mean-bytes", _at("combine", 0, "mean_bytes"), BYTES_BAD),
        ("entry", _at("combine", 0, "entry"), TEXT_BAD | {"empty": ""}),
        ("threshold-min-msgs", _at("threshold", "min_msgs"), BYTES_BAD),
        ("threshold-batch", _at("threshold", "batch"), BATCH_BAD),
        ("threshold", _at("threshold"), {"text": "x", "list": [1], "null": None}),
        ("combine", _at("combine"), {"text": "x", "object": {}, "null": None}),
        ("stream", _at("combine", 0), {"text": "x", "list": [1], "number": 3}),
        ("ddp-bucket-cap-mb", _at("ddp", "bucket_cap_mb"), CAP_BAD),
        ("ddp-verdict", _at("ddp", "verdict"), {"other": "huge", "number": 1, **WRONG_TYPE}),
        ("ddp", _at("ddp"), {"text": "x", "list": [1], "number": 1}),
    ],
}


def bad_file(kind: str, put: Callable[[dict, Any], None] | None = None, value: Any = None) -> str:
    doc = copy.deepcopy(BASE[kind])
    if put is not None:
        put(doc, value)
    return json.dumps(doc)  # NaN and Infinity as Python's json writes (and reads) them


def _setup(kind: str, text: str):
    def build(d: Path) -> None:
        make.charm_trace(d)
        make.hints_dir(d, files={f"{kind}.json": text})

    return build


for kind in BASE:
    case(f"hintval-whatif-{kind}-valid", "whatif", "t", "--hints", "h", setup=_setup(kind, bad_file(kind)),
         rc=(0,), item="3")
    for field, put, values in FIELDS[kind]:
        for label, value in values.items():
            case(f"hintval-whatif-{kind}-{field}-{label}", "whatif", "t", "--hints", "h",
                 setup=_setup(kind, bad_file(kind, put, value)), mention=f"{kind}.json", item="3", timeout_s=20)

# report --hints judges the same files the same way (the cases issue 23 names, and their neighbours)
REPORT = [("comm", "batch", BATCH_BAD), ("comm", "src-pe", PE_BAD), ("comm", "ddp-bucket-cap-mb", CAP_BAD),
          ("mapping", "pe", PE_BAD), ("schedule", "prio", PRIO_BAD)]
for kind in BASE:
    case(f"hintval-report-{kind}-valid", "report", "t", "-o", "r.html", "--hints", "h",
         setup=_setup(kind, bad_file(kind)), rc=(0,), outputs=("r.html",), item="3", timeout_s=60)
for kind, field, values in REPORT:
    put = next(p for f, p, _ in FIELDS[kind] if f == field)
    for label in ("nan", "inf", "huge", "text", "list"):
        if label in values:
            case(f"hintval-report-{kind}-{field}-{label}", "report", "t", "-o", "r.html", "--hints", "h",
                 setup=_setup(kind, bad_file(kind, put, values[label])), mention=f"{kind}.json", item="3",
                 timeout_s=60)

# the damaged-mapping cases of tests/hostile/corpus/hints.py start from make.mapping_doc(): it must be
# accepted as it is, or they are refused for being made for another program whatever their damage
case("hintval-whatif-make-mapping-doc-valid", "whatif", "t", "--hints", "h",
     setup=lambda d: (make.charm_trace(d), make.hints_dir(d)) and None, rc=(0,), item="3")
case("hintval-whatif-hostile-schedule-doc-valid", "whatif", "t", "--hints", "h",
     setup=lambda d: (make.charm_trace(d), make.hints_dir(d, files={"schedule.json": _hostile_schedule()})) and None,
     rc=(0,), item="3")
