"""schedule.json: message priorities for the entry methods on the critical path (advice for runtimes
with message priorities; charm4py's Python API has none, so no paradise runtime reads it).

Generator: hints.generators.schedule; what-if: the replay runs higher-priority messages first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hints.kinds import fields as f
from hints.kinds.base import Absent, HintKind

PRIO_MIN, PRIO_MAX = -(2**31), 2**31 - 1
"""Charm message priorities are signed 32-bit integers."""


def validate(path: Path, doc: dict[str, Any], pes: int | None) -> dict[str, int]:
    """{"Coll#k.entry" or "entry": prio}."""
    f.integer(path, "field 'default_prio'", doc.get("default_prio", 0), PRIO_MIN, PRIO_MAX)
    out: dict[str, int] = {}
    for n, p in enumerate(f.array(path, "field 'priorities'", doc.get("priorities"))):
        f.obj(path, f"priorities[{n}]", p)
        entry = f.text(path, f"priorities[{n}].entry", p.get("entry"), empty=False)
        prio = f.integer(path, f"priorities[{n}].prio", p.get("prio"), PRIO_MIN, PRIO_MAX)
        coll = p.get("coll")
        if coll is not None:
            f.text(path, f"priorities[{n}].coll", coll)
        if "critical_share" in p:
            f.number(path, f"priorities[{n}].critical_share", p["critical_share"], 0.0, 1.0)
        out[f"{coll}.{entry}" if coll else entry] = prio
    return out


def replay_effect(prios: dict[str, int]) -> dict[str, Any]:
    return {"priorities": prios}


KIND = HintKind(
    name="schedule", file="schedule.json", envelope="schedule", validate=validate,
    generator="hints.generators.schedule",
    consumer=Absent("advice for runtimes with message priorities (Charm++ C++); charm4py has no priority API"),
    runtime=None, whatif=replay_effect, fallback="priorities are not used",
)
