"""On-disk layout of the checkpoint directory: names, the COMPLETE marker, scanning and pruning.

<dir>/step-00000010/ holds a periodic checkpoint (DCP files, rng-rank<r>.pt, COMPLETE);
<dir>/jit-00000010-a0/rank-<r>/ one full no_dist DCP copy per surviving rank (rng.pt, COMPLETE).
COMPLETE is written last, atomically; a directory without it is never loaded. <dir>/events.jsonl
holds the manager's own records.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

MARKER = "COMPLETE"
EVENTS = "events.jsonl"
_PERIODIC_RE = re.compile(r"^step-(\d{8})$")
_JIT_RE = re.compile(r"^jit-(\d{8})-a(\d+)$")
_RANK_RE = re.compile(r"^rank-(\d+)$")

Found = tuple[int, str, Path, bool]
"""(step, kind, loadable dir, complete) of one checkpoint directory."""


def periodic_dir(root: Path, step: int) -> Path:
    return root / f"step-{step:08d}"


def jit_dir(root: Path, step: int, attempt: int, rank: int) -> Path:
    return root / f"jit-{step:08d}-a{attempt}" / f"rank-{rank}"


def periodic_step(d: Path) -> int:
    """The step of a periodic checkpoint directory (step-00000010 -> 10)."""
    return int(d.name[5:])


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def checkpoints(root: Path, complete_only: bool = True) -> list[Found]:
    """Every checkpoint directory found under root."""
    out = []
    for p in root.iterdir() if root.is_dir() else ():
        if not p.is_dir():
            continue
        if m := _PERIODIC_RE.match(p.name):
            out.append((int(m.group(1)), "periodic", p, (p / MARKER).exists()))
        elif m := _JIT_RE.match(p.name):
            ranks = sorted((q for q in p.iterdir() if _RANK_RE.match(q.name) and q.is_dir()),
                           key=lambda q: int(q.name[5:]))  # a stray rank-x or file is not a rank
            ok = [q for q in ranks if (q / MARKER).exists()]
            out.append((int(m.group(1)), "jit", (ok or ranks or [p])[0], bool(ok)))
    return [c for c in out if c[3] or not complete_only]


def newest_first(root: Path) -> list[tuple[int, str, Path]]:
    """The complete checkpoints, newest first (periodic before JIT on a tie)."""
    found = sorted(checkpoints(root), key=lambda c: (c[0], c[1] == "periodic"), reverse=True)
    return [(step, kind, path) for step, kind, path, _ in found]


def latest(root: Path) -> tuple[int, str, Path] | None:
    """The newest complete checkpoint (periodic preferred on a tie), or None."""
    found = newest_first(root)
    return found[0] if found else None


def prune(root: Path, keep: int) -> None:
    """Keeps the newest `keep` complete checkpoints; drops older ones and older partial ones."""
    found = sorted(checkpoints(root, complete_only=False), key=lambda c: (c[0], c[1] == "periodic"))
    complete = [c for c in found if c[3]]
    if len(complete) <= keep:
        return
    oldest_kept = complete[-keep][0]
    for step, kind, path, _ok in found:
        if step < oldest_kept:
            shutil.rmtree(path if kind == "periodic" else path.parent, ignore_errors=True)


def rng_file(kind: str, path: Path, rank: int) -> tuple[Path, int]:
    """This rank's RNG file in a checkpoint; a rank that died before a JIT save takes the saver's."""
    if kind == "periodic":
        own = path / f"rng-rank{rank}.pt"
        return (own, rank) if own.exists() else (path / "rng-rank0.pt", 0)
    own = path.parent / f"rank-{rank}"
    if (own / MARKER).exists():
        return own / "rng.pt", rank
    return path / "rng.pt", int(path.name[5:])
