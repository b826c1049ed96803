"""mapping.json: where each chare-array element starts in the next run (collection -> index -> PE).

Generator: hints.generators.mapping; consumer: hints.runtime.charm_map (an ArrayMap); what-if:
the replay moves each listed object's executions to its new PE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hints.format import HintError, index_tuple
from hints.kinds import fields as f
from hints.kinds.base import HintKind

INDEX_MAX = 2**31 - 1
"""Charm++ array indices are 32-bit integers (CkArrayIndex)."""


def validate(path: Path, doc: dict[str, Any], pes: int | None) -> dict[str, dict[str, int]]:
    """{coll: {index text: pe}}: every index a short JSON list of 32-bit non-negative integers,
    every PE one of the run's."""
    if "pes" in doc:
        f.integer(path, "field 'pes'", doc["pes"], 1, f.MAX_PES)
    for key in ("program", "strategy"):
        if key in doc:
            f.text(path, f"field {key!r}", doc[key])
    colls = f.obj(path, "field 'collections'", doc.get("collections"))
    hi = f.pe_range(pes)
    for coll, objs in colls.items():
        f.text(path, "a collection name", coll, empty=False)
        f.obj(path, f"collection {coll[:80]!r}", objs)
        for key, pe in objs.items():
            idx = index_tuple(key)
            if idx is None or max(idx) > INDEX_MAX:
                raise HintError(f"{path}: collection {coll[:80]!r}: bad index {key[:80]!r} "
                                f"(want e.g. '[0,1]', integers 0..{INDEX_MAX})")
            f.integer(path, f"collection {coll[:80]!r} index {key}: the PE", pe, 0, hi)
    return colls


def replay_effect(colls: dict[str, dict[str, int]]) -> dict[str, Any]:
    return {"mapping": colls}


KIND = HintKind(
    name="mapping", file="mapping.json", envelope="mapping", validate=validate,
    generator="hints.generators.mapping", consumer="hints.runtime.charm_map:MappingConsumer", runtime="charm",
    whatif=replay_effect, fallback="using the default map",
)
