"""Item 9 (whatif side): damaged hint files give one line naming the file, never a traceback
or a hang; a mapping made for another PE count is refused as docs/hints.md says."""

from __future__ import annotations

from pathlib import Path

from tests.hostile import make
from tests.hostile.case import case

M = "h/mapping.json"


def _doc(**over):
    return make.mapping_doc(**over)


def _schedule(**over):
    """A schedule.json in the schema's shape (priorities, default_prio): `entries` {coll.entry: prio}
    become its priorities, so a damaged value is what the file is refused for."""
    doc = {k: v for k, v in make.mapping_doc().items() if k not in ("collections", "strategy")}
    entries = over.pop("entries", {"Cell#0.Cell.compute": 1})
    prios = [{"coll": k.split(".", 1)[0], "entry": k.split(".", 1)[1], "prio": v} for k, v in entries.items()] \
        if isinstance(entries, dict) else entries
    doc.update(kind="schedule", priorities=prios, default_prio=0)
    doc.update(over)
    return doc


def _files(files):
    def build(d: Path) -> None:
        make.charm_trace(d)
        make.hints_dir(d, files=files)

    return build


def _special(kind: str):
    def build(d: Path) -> None:
        make.charm_trace(d)
        h = d / "h"
        h.mkdir()
        p = h / "mapping.json"
        if kind == "dir":
            p.mkdir()
        elif kind == "fifo":
            make.fifo(p)
        elif kind == "dev-zero":
            p.symlink_to("/dev/zero")
        elif kind == "dev-random":
            p.symlink_to("/dev/urandom")
        elif kind == "loop":
            p.symlink_to("mapping.json")
        elif kind == "dangling":
            p.symlink_to("nowhere.json")

    return build


BAD = {
    "index-1e400": _files({"mapping.json": '{"format": "paradise-hints/1", "kind": "mapping", "strategy": "greedy", '
                            '"provenance": {"program": "stencil", "pes": 2}, '
                            '"collections": {"Cell#0": {"[1e400,1]": 1}}}'}),
    "index-text": _files({"mapping.json": _doc(collections={"Cell#0": {"[a]": 1}})}),
    "index-not-list": _files({"mapping.json": _doc(collections={"Cell#0": {"7": 1}})}),
    "pe-1e5000": _files({"mapping.json": '{"format": "paradise-hints/1", "kind": "mapping", "strategy": "greedy", '
                         '"provenance": {"program": "stencil", "pes": 1e5000}, '
                         '"collections": {"Cell#0": {"[0]": 1}}}'}),
    "target-pe-huge": _files({"mapping.json": _doc(collections={"Cell#0": {"[0]": 2**70}})}),
    "target-pe-neg": _files({"mapping.json": _doc(collections={"Cell#0": {"[0]": -1}})}),
    "target-pe-text": _files({"mapping.json": _doc(collections={"Cell#0": {"[0]": "one"}})}),
    "target-pe-float": _files({"mapping.json": _doc(collections={"Cell#0": {"[0]": 1.5}})}),
    "pes-3-for-2": _files({"mapping.json": _doc(pes=3, provenance={**_doc()["provenance"], "pes": 3})}),
    "collections-list": _files({"mapping.json": _doc(collections=[1, 2])}),
    "collections-null": _files({"mapping.json": _doc(collections=None)}),
    "deep-json": _files({"mapping.json": "[" * 100_000 + "]" * 100_000}),
    "deep-json-object": _files({"mapping.json": '{"a":' * 50_000 + "1" + "}" * 50_000}),
    "not-json": _files({"mapping.json": "{not json"}),
    "binary": _files({"mapping.json": b"\xff\xfe\x00garbage"}),
    "empty": _files({"mapping.json": ""}),
    "json-list": _files({"mapping.json": "[1, 2]"}),
    "format-v2": _files({"mapping.json": _doc(format="paradise-hints/2")}),
    "format-missing": _files({"mapping.json": {k: v for k, v in _doc().items() if k != "format"}}),
    "kind-wrong": _files({"mapping.json": _doc(kind="schedule")}),
    "program-other": _files({"mapping.json": _doc(provenance={**_doc()["provenance"], "program": "other"})}),
    "provenance-list": _files({"mapping.json": _doc(provenance=[1])}),
    "huge-file": _files({"mapping.json": '{"format": "paradise-hints/1", "pad": "' + "x" * (40 << 20) + '"}'}),
    "prio-1e30": _files({"schedule.json": _schedule(entries={"Cell#0.Cell.compute": 1e30})}),
    "prio-text": _files({"schedule.json": _schedule(entries={"Cell#0.Cell.compute": "high"})}),
    "prio-nan": _files({"schedule.json": _schedule(entries={"Cell#0.Cell.compute": float("nan")})}),
    "schedule-entries-list": _files({"schedule.json": _schedule(entries=[1])}),
    "dir": _special("dir"),
    "fifo": _special("fifo"),
    "dev-zero": _special("dev-zero"),
    "dev-urandom": _special("dev-random"),
    "symlink-loop": _special("loop"),
    "dangling": _special("dangling"),
}
for name, build in BAD.items():
    mention = "schedule.json" if name.startswith(("prio", "schedule")) else "mapping.json"
    case(f"hints-whatif-{name}", "whatif", "t", "--hints", "h", setup=build, mention=mention, item="9",
         timeout_s=20)
