"""PyTorch tracer: public API for programs and for other paradise runtime code.

Every function here is a cheap no-op unless the process runs under ``paradise trace torch``
(which starts ``tracers.torch.run`` in each rank with ``PARADISE_TRACE=DIR`` set). The module
imports neither torch nor pyarrow, so calling it from untraced code costs one attribute check.

* ``with step(n):`` marks an explicit training step (optional: the tracer already records a
  ``step`` row per ``optimizer.step()`` through global optimizer hooks; use it for loops
  without a torch optimizer).
* ``with phase(name):`` records a ``phase`` row (e.g. ``"data"``, ``"eval"``); phases named
  ``forward``, ``backward`` or ``optimizer`` count as compute in the step breakdown.
* ``record_event(kind, name, t0_ns, t1_ns=None, **columns)`` records one row of any kind
  (``checkpoint``, ``restore``, ``failure``, ``restart``, ``mark``...). Times are
  ``time.time_ns()`` values; the tracer converts them to the trace's ns-since-start clock
  (the reader aligns the ranks' clocks). Extra ``columns`` are trace columns (``bytes``, ``step``,
  ``cat``, ``obj``...); any other keyword goes into the row's ``args`` JSON. The checkpoint
  manager calls it for its saves and restores; an automatic row that the tracer made for a
  ``torch.save``/``dcp.save`` inside the same ``[t0_ns, t1_ns]`` is then dropped, so a save is
  never counted twice.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

_tracer: Any = None
"""The active tracers.torch.tracer.Tracer, set by tracers.torch.run when tracing is on."""

_NULL = contextlib.nullcontext()


def enabled() -> bool:
    """True when this process is being traced."""
    return _tracer is not None


@contextlib.contextmanager
def _step_cm(n: int) -> Iterator[None]:
    t0 = time.time_ns()
    try:
        yield
    finally:
        tr = _tracer
        if tr is not None:
            tr.explicit_step(n, t0, time.time_ns())


@contextlib.contextmanager
def _phase_cm(name: str) -> Iterator[None]:
    t0 = time.time_ns()
    try:
        yield
    finally:
        tr = _tracer
        if tr is not None:
            tr.record_wall("phase", name, t0, time.time_ns())


def step(n: int) -> contextlib.AbstractContextManager[None]:
    """Context manager marking training step ``n`` (no-op when not tracing)."""
    return _NULL if _tracer is None else _step_cm(n)


def phase(name: str) -> contextlib.AbstractContextManager[None]:
    """Context manager recording a named phase of the current step (no-op when not tracing)."""
    return _NULL if _tracer is None else _phase_cm(name)


def record_event(kind: str, name: str, t0_ns: int, t1_ns: int | None = None, **columns: Any) -> None:
    """Records one event with ``time.time_ns()`` times (no-op when not tracing).

    ``kind`` is a trace kind (``checkpoint``, ``restore``, ``failure``, ``restart``, ``mark``...);
    ``columns`` may name trace columns (``bytes``, ``step``, ``cat``, ``obj``, ``dtype``...);
    other keywords are stored as JSON in ``args``.
    """
    tr = _tracer
    if tr is not None:
        tr.record_wall(kind, name, t0_ns, t1_ns, **columns)


def current_step() -> int | None:
    """The optimizer step the tracer is in (None when not tracing or before the first step)."""
    tr = _tracer
    return None if tr is None else tr.step


def flush() -> None:
    """Writes the buffered rows and closes this rank's file as incomplete (no-op when not tracing).

    For code about to call ``os._exit`` (which skips the tracer's normal close), such as the
    checkpoint manager after a just-in-time save.
    """
    tr = _tracer
    if tr is not None:
        tr.close(complete=False)
