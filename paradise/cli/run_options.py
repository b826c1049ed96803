"""The checks `paradise trace charm`, `trace torch` and `tune` make on the options of the run they start."""

from __future__ import annotations

import math

from paradise import units
from paradise.errors import InvalidOption

MAX_TIMEOUT_S = 1e7
"""Longest --timeout (about 115 days): larger values are typing errors, and overflow timers."""
MAX_PES = 4096
"""Most PEs charmrun starts on this machine (+pN): more is a typing error, not a run."""


def check_run_options(timeout: float | None, pes: int, option: str = "--pes") -> None:
    """--timeout within (0, MAX_TIMEOUT_S] and finite; the process count within 1..MAX_PES."""
    if timeout is not None and not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT_S):
        raise InvalidOption(f"--timeout: {units.number(timeout, 6)} is out of range (seconds, > 0 and at most {units.number(MAX_TIMEOUT_S, 6)})")
    if not 1 <= pes <= MAX_PES:
        raise InvalidOption(f"{option}: {pes} is out of range (1..{MAX_PES})")
