"""Runtime consumer of checkpoint.json: the CheckpointManager (manager.py), its directory layout
(layout.py) and RNG capture (rng.py)."""

from hints.runtime.checkpoint.layout import MARKER
from hints.runtime.checkpoint.manager import (
    JIT_EXIT_CODE,
    CheckpointManager,
    TerminationRequested,
    load_policy,
)

__all__ = ["CheckpointManager", "TerminationRequested", "load_policy", "MARKER", "JIT_EXIT_CODE"]
