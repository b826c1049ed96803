"""One rank's recorder: clock, per-step row buffer, and the crash-safe spool writer (tracers.spool).

Rows of one training step (forward, loss, backward and optimizer phases, collectives) wait in a
small buffer until the step's optimizer post-hook, because only then is the step number known
(after a restore it comes from the optimizer state, so resumed runs keep the script's numbering).
Collective end times arrive on communication threads (future callbacks); those threads only
store one int into the pending row, the main thread writes rows. Failures are written and
flushed at once, so a process killed right after an error still leaves them on disk.

Does not import torch at module level (only tracers.torch.hooks does).
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from paradise.format import COLUMN_NAMES
from tracers.clock import record_offset
from tracers.torch.clock import fake_skew, wall_clock
from tracers.torch.steprows import CHUNK_WIDTH, FLUSH_ROWS, StepRowWriter

COL = {name: i for i, name in enumerate(COLUMN_NAMES)}
WIDTH = len(COLUMN_NAMES)
K, PE, T0, T1, CAT, COLL, OBJ, NAME, BYTES, STEP, GROUP, GSIZE, DTYPE, ARGS = (
    COL[c]
    for c in (
        "kind",
        "pe",
        "t0",
        "t1",
        "cat",
        "coll",
        "obj",
        "name",
        "bytes",
        "step",
        "group",
        "group_size",
        "dtype",
        "args",
    )
)

FAILURE_DEDUP_NS = 10_000_000_000
"""A failure within 10 s of one already recorded on the rank is the same incident seen twice
(an exception recorded by the backward hook, then logged by the checkpoint manager or escaping
the script): it is not written again."""
FLUSH_STEPS = CHUNK_WIDTH * FLUSH_ROWS // 8
"""Values of StepRowWriter.chunks (CHUNK_WIDTH per step) after which a step flushes before the
interval: with a step's phase and bucket rows, about FLUSH_ROWS rows."""
BUFFER_MAX_ROWS = 10_000
"""Rows held for a step that never ends (a loop without optimizer.step) before writing them untagged."""
PHASES_MAX = 3 * BUFFER_MAX_ROWS
"""Values held in Tracer._phases (3 a phase) past which they are flushed (Tracer.phases_overflow)."""
BUCKETS_MAX = 7 * BUFFER_MAX_ROWS
"""Values held in Tracer._buckets (7 a bucket) past which they are flushed (Tracer.phases_overflow)."""

ENV_DIR = "PARADISE_TRACE"
ENV_ORIGIN = "PARADISE_TRACE_ORIGIN_NS"
ENV_PROGRAM = "PARADISE_TRACE_PROGRAM"
ENV_FLUSH_S = "PARADISE_TRACE_FLUSH_S"


def rank_file_stem(rank: int, restart: int) -> str:
    """`pe-00003` for the first attempt, `pe-00003.restart-01` for torchrun restart 1."""
    stem = f"pe-{rank:05d}"
    return stem if restart == 0 else f"{stem}.restart-{restart:02d}"


class Tracer:
    """Records one rank's events; the hooks in tracers.torch.hooks call its methods.

    Tracer(...) builds a tracers.torch.nativetracer.NativeTracer where the compiled hooks run
    (tracers.torch.native); `recorder_kind` says which recorder records."""

    native: Any = None  # the compiled hooks' module (NativeTracer), None: the Python hooks
    recorder_kind = "python"

    def __new__(cls, *args: Any, **kwargs: Any) -> Tracer:
        kind = "python"
        if cls is Tracer:
            from tracers.torch.native import tracer_class

            cls, kind = tracer_class(cls)
        obj = super().__new__(cls)
        obj.recorder_kind = kind
        return obj

    def __init__(
        self,
        directory: str | os.PathLike,
        *,
        rank: int,
        world_size: int,
        local_rank: int = 0,
        restart: int = 0,
        origin_ns: int | None = None,
        program: str = "",
        flush_interval_s: float = 2.0,
    ) -> None:
        self.rank = rank
        self.world_size = world_size
        self.local_rank = local_rank
        self.restart = restart
        self.origin_ns = origin_ns if origin_ns is not None else time.time_ns()
        self._base = self.origin_ns  # trace time = this rank's clock - _base (own clock: the reader aligns)
        self._skew = fake_skew(rank)  # an injected clock error (tests of the alignment)
        if self._skew is not None:
            wall = wall_clock(rank, self.origin_ns)
            self.now = lambda: wall() - self._base  # type: ignore[method-assign]
        self.clock_offsets: dict[str, dict[str, int | None]] = {}  # this rank's offsets to rank 0
        self.clock_group: Any = None  # the process group of the clock pings (None: the default group)
        self.host = socket.gethostname()
        self.writer = StepRowWriter(
            Path(directory),
            rank,
            stem=rank_file_stem(rank, restart),  # distinct files per torchrun attempt
            flush_interval_s=flush_interval_s,
            source="torch",
            program=program,
            pes=world_size,
            world_size=world_size,
            hosts=None,
            clock={"method": "unaligned", "residual_ns": None},
            origin_ns=self.origin_ns,
            extra={
                "restart": restart,
                "local_rank": local_rank,
                "host": self.host,
                "tracer": "paradise-torch",
            },
        )
        self.flush_interval_ns = int(flush_interval_s * 1e9)
        self.step: int | None = None  # number of the step in progress (None before the first)
        self._counter = 0  # steps completed in this process (fallback numbering)
        self._buffer: list[list[Any]] = []  # rows of the step in progress
        # The writer's flat lists, which the hooks append to: compute phases (name, t0, t1, name, ...)
        # and DDP bucket rows (steprows.BUCKET_WIDTH values each); a step's end hands them over.
        self._phases: list[Any] = self.writer.phases
        self._buckets: list[Any] = self.writer.buckets
        self._chunks: list[int] = self.writer.chunks
        self._hand_over = self._chunks.extend  # StepRowWriter.add_step without its frame
        self._inflight: list[list[Any]] = []  # async collectives not yet completed at their step's end
        self._auto_io: list[list[Any]] = []  # torch.save/dcp rows, dropped when record_event covers them
        self._explicit = False  # the program marks steps itself with tracers.torch.step()
        self.step_start: int | None = None  # trace ns of the current step's first forward
        self.closed = False
        self._last_failure: int | None = None  # trace ns of the last failure row written
        # state shared with tracers.torch.hooks
        self.fwd_end: int | None = None  # end of the last forward not yet followed by backward
        self.forward_seen = False  # a DDP forward ran in the step in progress
        self._prev_end: int | None = None  # end of the previous step
        self.last_launch: int | None = None  # last DDP bucket launch through a program's comm hook
        # rows of the DDP buckets launched in the backward in progress (tracers.torch.buckets), their
        # end open until the backward returns (tracers.torch.hooks), steprows.BUCKET_WIDTH values each
        self.launched: list[Any] = []
        self.ddp_watches: list[Any] = []  # tracers.torch.buckets.BucketWatch of DDP modules with hooked buckets
        self.dcp_installed = False
        self.step_callbacks: list[Any] = []  # called after each step row (e.g. profiler.step)
        self._flushed_at = self.now()  # trace time of the last flush (Tracer.flush)
        self.write(self.new_row("mark", "trace_start", self.now(), None))

    # clock
    def now(self) -> int:
        """Trace time (ns since the run's start on this rank's clock) of this instant."""
        return time.time_ns() - self._base

    def to_trace(self, wall_ns: int | None) -> int | None:
        """Trace time of a time.time_ns() value (with this rank's injected skew, if any)."""
        if wall_ns is None:
            return None
        if self._skew is not None:
            offset, drift = self._skew
            wall_ns += offset + int(drift * (wall_ns - self.origin_ns))
        return wall_ns - self._base

    def set_clock_offset(self, when: str, offset_ns: int, error_ns: int, at: int) -> None:
        """Records this rank's offset to rank 0 measured at trace time `at` (`when`: start or end)."""
        self.writer.set_metadata(clock=record_offset(self.clock_offsets, self.rank, when, offset_ns, error_ns, at))

    # rows
    def new_row(self, kind: str, name: str | None, t0: int, t1: int | None) -> list[Any]:
        row: list[Any] = [None] * WIDTH
        row[K] = kind
        row[PE] = self.rank
        row[T0] = t0
        row[T1] = t1
        row[NAME] = name
        return row

    def compute(self, name: str, t0: int, t1: int) -> None:
        """Records a compute phase (forward, loss, backward, optimizer).

        The hooks append the same three values to `_phases` themselves (no frame for this call):
        no row object until the step ends, since every container a hook allocates also brings
        Python's cyclic GC (which walks torch's large heap) closer."""
        self._phases.extend((name, t0, t1))
        if len(self._phases) > PHASES_MAX:
            self.phases_overflow()

    def phases_overflow(self) -> None:
        """The hooks' call when `_phases` or `_buckets` hold more than PHASES_MAX or BUCKETS_MAX
        values: a flush, and when half of them belong to the step in progress, a step that never
        ends (a loop without optimizer.step), its rows first, untagged. After close: dropped."""
        if self.closed:
            self._phases.clear()
            self._buckets.clear()
            return
        chunks = self.writer.chunks
        p0, b0 = (chunks[-CHUNK_WIDTH], chunks[-CHUNK_WIDTH + 1]) if chunks else (0, 0)
        if len(self._phases) - p0 > PHASES_MAX // 2 or len(self._buckets) - b0 > BUCKETS_MAX // 2:
            self._emit_buffer(None, None)
        self.flush()

    def bucket(self, t0: int, t1: int, obj: int, nbytes: int, dtype: str | None, group: str | None,
               group_size: int | None) -> None:
        """Records a DDP bucket all-reduce of the step in progress (a `collective` row, cat ddp_bucket)."""
        self._buckets.extend((t0, t1, obj, nbytes, dtype, group, group_size))
        if len(self._buckets) > BUCKETS_MAX:
            self.phases_overflow()

    def buffer(self, row: list[Any]) -> None:
        """Adds a row of the step in progress (written when the step ends)."""
        buf = self._buffer
        buf.append(row)
        if len(buf) > BUFFER_MAX_ROWS and not self.closed:
            self._emit_buffer(None, None)

    def write(self, row: list[Any]) -> None:
        """Writes a row now (rows outside steps, failures); nothing after close()."""
        if not self.closed:
            self.writer.append(tuple(row))

    def record_wall(self, kind: str, name: str, t0_ns: int, t1_ns: int | None = None, **columns: Any) -> None:
        """Public record_event: wall-clock times; trace columns by name, the rest into args."""
        t0 = self.to_trace(int(t0_ns))
        t1 = self.to_trace(int(t1_ns)) if t1_ns is not None else None
        row = self.new_row(kind, name, t0, t1)
        extra = {}
        for key, value in columns.items():
            if key in COL and key not in ("kind", "pe", "t0", "t1", "name"):
                row[COL[key]] = value
            else:
                extra[key] = value
        if extra:
            row[ARGS] = json.dumps(extra, default=str, sort_keys=True)
        if row[STEP] is None and kind in ("checkpoint", "restore", "failure", "mark"):
            row[STEP] = self.step
        if kind in ("checkpoint", "restore") and t1 is not None:
            # The caller's own row replaces automatic rows of the same save/load.
            self._auto_io = [r for r in self._auto_io if not (t0 <= r[T0] and r[T1] <= t1)]
        if kind == "phase":
            self.buffer(row)
        elif kind == "failure":
            if self._seen_failure(t0):
                return
            self.write(row)
            self.flush()
        else:
            self.write(row)

    def auto_io(self, row: list[Any]) -> None:
        self._auto_io.append(row)

    def failure(self, exc: BaseException, where: str, t0: int | None = None) -> None:
        """Writes and flushes a `failure` row for an exception (once per exception object)."""
        if self.closed or getattr(exc, "_paradise_recorded", False):
            return
        try:
            exc._paradise_recorded = True  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - some exception types refuse attributes
            pass
        t1 = self.now()
        if self._seen_failure(t1):
            return
        row = self.new_row("failure", type(exc).__name__, t0 if t0 is not None else t1, t1)
        row[CAT] = where
        row[STEP] = self.step
        row[ARGS] = json.dumps({"message": str(exc)[:500], "where": where})
        self._emit_buffer(None, None)
        self.write(row)
        self.flush()

    def _seen_failure(self, t: int) -> bool:
        """True when a failure was written within FAILURE_DEDUP_NS of t; else notes t."""
        last = self._last_failure
        if last is not None and abs(t - last) < FAILURE_DEDUP_NS:
            return True
        self._last_failure = t
        return False

    # steps
    def end_step(self, n: int, t0: int | None, t1: int) -> None:
        """Writes the step row and the buffered rows of step n."""
        if t0 is None:  # no DDP module (e.g. FSDP): the step runs from the previous one's end
            start = self.step_start if self.forward_seen or self._prev_end is None else self._prev_end
            if start is None:
                start = self._first_phase_start(t1)
        else:
            start = t0
        if not self.closed:
            self._hand_over((len(self._phases), len(self._buckets), n, start, t1))
        if self._buffer or self._inflight or self._auto_io:
            self._emit_buffer(n, start)
        self._counter += 1
        self.step = n + 1
        self.step_start = self.fwd_end = None
        self.forward_seen = False
        self._prev_end = t1
        if self.step_callbacks:
            for cb in self.step_callbacks:
                cb()
        if t1 - self._flushed_at > self.flush_interval_ns or len(self._chunks) > FLUSH_STEPS:
            self.flush()

    def _first_phase_start(self, t1: int) -> int:
        """Start of a step with no forward seen and no step before it: its first phase, else t1."""
        chunks = self._chunks
        mine = self._phases[chunks[-CHUNK_WIDTH] if chunks else 0:]  # this step's phases
        return min([r[T0] for r in self._buffer if r[K] == "phase"] + mine[1::3], default=t1)

    def explicit_step(self, n: int, t0_wall: int, t1_wall: int) -> None:
        self._explicit = True
        self.end_step(n, self.to_trace(t0_wall), self.to_trace(t1_wall))

    def _emit_buffer(self, n: int | None, start: int | None) -> None:
        """Writes the buffered rows, tagged with step n when they start at or after `start`."""
        if self.closed:
            self._buffer.clear()
            self._phases.clear()
            self._buckets.clear()
            return
        append = self.writer.append
        self.writer.add_step(n, start, None)
        for row in self._buffer:
            if n is not None and row[T0] >= start:
                row[STEP] = n
            if row[T1] is None and row[K] == "collective":
                self._inflight.append(row)
            else:
                append(tuple(row))
        self._buffer.clear()
        if self._inflight:
            done = [r for r in self._inflight if r[T1] is not None]
            for r in done:
                append(tuple(r))
            self._inflight = [r for r in self._inflight if r[T1] is None]
        if self._auto_io:
            for r in self._auto_io:
                append(tuple(r))
            self._auto_io = []

    # placement
    def set_placement(self, hosts: list[str], extra: dict[str, Any]) -> None:
        meta_extra = dict(self.writer.metadata.get("extra") or {})
        meta_extra.update(extra)
        self.writer.set_metadata(hosts=hosts, extra=meta_extra)

    # files
    def flush(self) -> None:
        if self.closed:
            return
        self._flushed_at = self.now()  # end_step's interval, in trace time: no clock read there
        self.writer.flush()

    def close(self, complete: bool) -> None:
        """Writes everything still buffered and closes this rank's spool (converted after the run)."""
        if self.closed:
            return
        self._emit_buffer(None, None)
        for r in self._inflight:
            self.writer.append(tuple(r))
        self._inflight = []
        self.closed = True  # from here on hooks that still fire record nothing
        self.writer.close(complete=complete)
