"""Charm-style tracer for charm4py programs.

Public API for traced programs: ``step(n)`` marks the start of iteration ``n`` for the
calling chare. It is a no-op unless the program runs under ``paradise trace charm``.
"""

from __future__ import annotations

_step_hook = None  # set by tracers.charm.hooks.install_step_api() when tracing is on (which may replace step too)


def step(n: int) -> None:
    """Mark that the calling chare starts iteration ``n`` (no-op when not tracing)."""
    if _step_hook is not None:
        _step_hook(n)
