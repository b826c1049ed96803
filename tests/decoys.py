"""A hostile working folder: modules named like paradise's (and like the launchers') that
append their path to a marker file when imported or run. A paradise command run from it
must run paradise's own code, so the marker must never appear."""

from __future__ import annotations

from pathlib import Path

DECOY_MODULES = (
    "paradise/__init__.py", "paradise/cli/__init__.py", "paradise/cli/main.py",
    "paradise/boot/__init__.py", "paradise/boot/charm.py",
    "tracers/__init__.py", "tracers/job.py", "tracers/program.py",
    "tracers/charm/__init__.py", "tracers/charm/run.py",
    "tracers/torch/__init__.py", "tracers/torch/run.py",
    "hints/__init__.py", "hints/format.py", "hints/runtime/__init__.py", "hints/runtime/charm_map.py",
    "hints/runtime/checkpoint/__init__.py", "hints/runtime/checkpoint/manager.py",
    "charmrun/__init__.py", "charmrun/start.py",
    "torch/__init__.py", "torch/distributed/__init__.py", "torch/distributed/run.py",
)  # fmt: skip


def plant(folder: Path) -> Path:
    """Writes the decoys into folder; returns the marker file they would write (beside it)."""
    marker = folder.parent / f"{folder.name}.MARKER"
    for rel in DECOY_MODULES:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"with open({str(marker)!r}, 'a') as fh:\n    fh.write(__file__ + '\\n')\n")
    return marker
