"""The Tracer whose training-step hooks are compiled (tracers/torch/_hooks.c): its step state lives in
the compiled recorder (`_state`, a _hooks.Rec), shown as the Tracer's own attributes, and the hooks'
rows wait in the recorder's buffer until Python reads the Tracer's lists (every method that reads
them hands the buffer over first: `Rec.drain`). Rows, methods and attributes are the Tracer's.
Does not import torch.
"""

from __future__ import annotations

from typing import Any

from tracers.torch import _hooks
from tracers.torch.clock import reader
from tracers.torch.native import clock_arg
from tracers.torch.tracer import BUCKETS_MAX, FLUSH_STEPS, PHASES_MAX, Tracer


def _state_attr(name: str) -> property:
    """A Tracer attribute kept in the compiled recorder (an int or None, or a flag)."""
    return property(lambda self: getattr(self._state, name), lambda self, value: setattr(self._state, name, value),
                    doc=f"the compiled recorder's {name}")


class NativeTracer(Tracer):
    """A Tracer recorded by the compiled hooks (module doc); Tracer() builds one where they run."""

    native = _hooks
    step_start = _state_attr("step_start")
    fwd_end = _state_attr("fwd_end")
    last_launch = _state_attr("last_launch")
    forward_seen = _state_attr("forward_seen")
    step = _state_attr("step")
    closed = _state_attr("closed")
    dcp_installed = _state_attr("dcp_installed")
    flush_interval_ns = _state_attr("flush_interval_ns")
    _prev_end = _state_attr("prev_end")
    _flushed_at = _state_attr("flushed_at")
    _counter = _state_attr("counter")
    _explicit = _state_attr("explicit")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._state = _hooks.Rec()
        super().__init__(*args, **kwargs)
        read, base = reader(self)
        self._state.bind(self, clock_arg(read), base, self._phases, self._buckets, self._chunks, self.step_callbacks,
                         PHASES_MAX, BUCKETS_MAX, FLUSH_STEPS)

    def _rows_waiting(self) -> None:
        """Tells the compiled step end whether the Tracer holds rows of its own (it then calls end_step)."""
        self._state.slow = bool(self._buffer or self._inflight or self._auto_io)

    def buffer(self, row: list[Any]) -> None:
        super().buffer(row)
        self._state.slow = True

    def auto_io(self, row: list[Any]) -> None:
        super().auto_io(row)
        self._state.slow = True

    def end_step(self, n: int, t0: int | None, t1: int) -> None:
        self._state.drain()
        super().end_step(n, t0, t1)
        self._rows_waiting()

    def _emit_buffer(self, n: int | None, start: int | None) -> None:
        self._state.drain()
        super()._emit_buffer(n, start)
        self._rows_waiting()

    def phases_overflow(self) -> None:
        self._state.drain()
        super().phases_overflow()

    def compute(self, name: str, t0: int, t1: int) -> None:
        self._state.drain()
        super().compute(name, t0, t1)

    def bucket(self, *args: Any) -> None:
        self._state.drain()
        super().bucket(*args)

    def flush(self) -> None:
        self._state.drain()
        super().flush()

    def close(self, complete: bool) -> None:
        self._state.drain()
        super().close(complete)
