"""The registry of hint kinds. A kind is one module here (its validation, and where its schema,
generator, runtime consumer and what-if effect are) plus one line in KINDS; the next run's
consumers, `whatif`, `report --hints` and `tune` all judge a file through `HintKind.load`."""

from __future__ import annotations

import os
from pathlib import Path

from hints.format import HintError
from hints.kinds import checkpoint, comm, ddp, mapping, schedule
from hints.kinds.base import Absent, HintKind

KINDS: dict[str, HintKind] = {k.name: k for k in (
    mapping.KIND,
    schedule.KIND,
    comm.KIND,
    ddp.KIND,
    checkpoint.KIND,
)}


def refusals(hints_dir: str | os.PathLike, runtime: str, *, program: str | None, pes: int | None) -> list[str]:
    """One line per file in `hints_dir` that the `runtime` ('charm' or 'torch') reads by itself and
    could not use: what `paradise trace` prints before the run (which then goes on without it)."""
    out = []
    for kind in KINDS.values():
        path = Path(hints_dir) / kind.file
        if kind.runtime != runtime or not os.path.lexists(path):
            continue
        try:
            kind.load(path, program=program, pes=pes)
        except HintError as exc:
            out.append(kind.refusal(exc))
    return out


__all__ = ["KINDS", "Absent", "HintError", "HintKind", "refusals"]
