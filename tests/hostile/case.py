"""One hostile-input case: how to build its folder, what to run, and what must come out.

A case runs in a folder of its own (`work/`, the command's current folder). Every file there
before the run that is not under one of `outputs` must be byte-identical after it, and no file
may appear outside `outputs`. The expected outcome is an exit code; a refusal (exit 2) must be
one line on stderr that names `mention` (the file or the option at fault).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

Setup = Callable[[Path], None]

MEM_LIMIT_MB = 3072
"""Address-space limit of a case's child: paradise with pyarrow, DuckDB and pandas loaded maps
~1.5 GiB; 16 GiB allocations (metadata claiming 2^31 PEs) must fail fast, not swap."""
TIMEOUT_S = 30.0
"""A case still running after this is a hang (the slowest sane case here takes ~3 s alone)."""


@dataclass(frozen=True)
class Case:
    """A command line run against a folder built by `setup`, and its expected outcome."""

    id: str
    argv: tuple[str, ...]
    setup: Setup | None = None
    rc: tuple[int, ...] = (2,)
    mention: str | None = None
    """Text the one stderr line of a refusal must hold (the file or option named)."""
    outputs: tuple[str, ...] = ()
    """Paths (relative to the case folder) the command may create or change, files or folders."""
    stdout_has: tuple[str, ...] = ()
    """Texts stdout must hold verbatim (e.g. a hostile name shown as text)."""
    stdout_lacks: tuple[str, ...] = ()
    warnings_ok: bool = False
    """Lines starting 'paradise: warning:' may come before the outcome."""
    launch: bool = False
    """Needs a real program launch (charmrun / torchrun): run as a subprocess of its own."""
    fsize_bytes: int | None = None
    """RLIMIT_FSIZE of the child: writes past it fail (a full disk, in miniature)."""
    timeout_s: float = TIMEOUT_S
    mem_mb: int = MEM_LIMIT_MB
    item: str = ""
    """The defect of issue 15 the case covers (e.g. '6'), or 'extra'."""
    env: tuple[tuple[str, str], ...] = field(default=())
    gone: tuple[str, ...] = ()
    """Paths that must no longer exist after the run (stale temporaries the command removes)."""
    signal_after: tuple[int, float] | None = None
    """(signal, seconds): send it to paradise this long after the start (launch cases)."""


REGISTRY: dict[str, Case] = {}


def add(case: Case) -> Case:
    if case.id in REGISTRY:
        raise ValueError(f"duplicate hostile case id {case.id!r}")
    REGISTRY[case.id] = case
    return case


def case(id: str, *argv: str, **kw) -> Case:
    """Registers a case; argv is the paradise command line (without 'paradise')."""
    return add(Case(id=id, argv=tuple(argv), **kw))
