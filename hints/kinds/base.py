"""What a hint kind is: its file, its one validation, and where its generator, runtime consumer and
what-if effect live. Every reader of a hint file (the next run's consumer, `whatif`,
`report --hints`, `tune`) goes through `HintKind.load`, so one file is judged one way everywhere."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hints.format import HintError, load_hint


@dataclass(frozen=True)
class Absent:
    """A part a kind deliberately lacks, with the reason (e.g. no charm4py runtime reads priorities)."""

    reason: str


Validate = Callable[[Path, dict[str, Any], "int | None"], Any]
"""(path, envelope-checked document, PE count or world size of the run, if known) -> the payload
the consumer uses; raises HintError naming the file, the field and the value."""


@dataclass(frozen=True)
class HintKind:
    """One hint kind: one module under hints/kinds/ and one line in hints.kinds.KINDS."""

    name: str
    file: str
    """File name in a hints folder (ddp shares comm.json with comm: its `ddp` section)."""
    envelope: str
    """The file's `kind` field."""
    validate: Validate
    generator: str | Absent
    """Dotted name of the pure generator module (hints/generators/)."""
    consumer: str | Absent
    """'module:attribute' of the runtime hook that applies the hint in the next run."""
    runtime: str | None
    """Whose traced launch reads the file by itself: 'charm', 'torch' or None (used on request)."""
    whatif: Callable[[Any], dict[str, Any]] | Absent
    """Validated payload -> keyword arguments of paradise.whatif.Replayer.replay."""
    fallback: str
    """What the run does instead when the file is refused (ends the one-line refusal)."""

    def read(self, path: str | os.PathLike, *, program: str | None = None,
             pes: int | None = None) -> tuple[dict[str, Any], Any]:
        """(the file's document, its validated payload); HintError on anything the consumer could not use.

        The kinds that share the file (comm and ddp: comm.json) are checked too, so a file is judged
        whole, the same way by every reader, whichever part it wants."""
        from hints.kinds import KINDS

        p = Path(path)
        doc = load_hint(p, self.envelope, program=program, pes=pes)
        for other in KINDS.values():
            if other.file == self.file and other is not self:
                other.validate(p, doc, pes)
        return doc, self.validate(p, doc, pes)

    def load(self, path: str | os.PathLike, *, program: str | None = None, pes: int | None = None) -> Any:
        """The validated payload of `path` (HintError on anything the consumer could not use)."""
        return self.read(path, program=program, pes=pes)[1]

    def refusal(self, exc: HintError) -> str:
        """The one line a run prints when it cannot use the file."""
        return f"paradise: {self.file} refused: {exc}; {self.fallback}"
