"""Per-process tracer state shared by the hook modules (one charm4py PE per process)."""

from __future__ import annotations

import os
import time
from typing import Any

from tracers.charm.identity import MAIN_COLL, Registry
from tracers.charm.rowbuf import MSG_PE_SHIFT, Strings, make_recorder
from tracers.clock import ENV_FAKE_SKEW

SKEWED: list = [time.monotonic_ns]
"""The clock when ENV_FAKE_SKEW is set: lifecycle.open_writer puts tracers.clock.skewed there once
the PE is known (and the native recorder's clock runs off the same way)."""

if ENV_FAKE_SKEW in os.environ:  # tests of the clock alignment: the hooks bind `clock` at import
    def clock() -> int:
        """This PE's clock with the injected skew (SKEWED)."""
        return SKEWED[0]()
else:
    clock = time.monotonic_ns
    """One clock for every PE on a host (CLOCK_MONOTONIC is system-wide), so times line up."""

__all__ = ["SKEWED", "MSG_PE_SHIFT", "ST", "State", "clock"]


class State:
    """Mutable holders are one-element lists so hot-path closures can bind them once."""

    def __init__(self) -> None:
        self.tracing = False
        self.trace_dir: str | None = None
        self.program = ""
        self.pe = -1
        self.pes = 0
        self.origin = 0
        self.origin_unix = 0
        self.writer: Any = None
        self.cur: list = [None]  # record of the entry method now running on this PE
        self.pend: list = [None]  # (msg bytes, msg id, bytes, t) of the last packed message
        self.mute: list = [0]  # > 0 while the tracer itself sends (not recorded)
        self.seq: list = [0]
        self.strings = Strings()
        self.reg = Registry(self.strings)
        self.rec, self.recorder_kind = make_recorder()  # packed rows (rowbuf); the writer takes them
        self.pending_create: tuple[str, str] | None = None
        self.single_next = False
        self.group: Any = None  # proxy of the tracer's own Group
        self.exiting = False
        self.failing = False
        self.abort_reason = ""
        self.open: dict[int, list] = {}  # coroutine execs paused and not finished yet
        self.clock_meta: dict[str, Any] = {"method": "host-monotonic", "residual_ns": 0}  # set by clockping
        self.clock_offsets: dict[str, dict[str, int | None]] = {}  # this PE's offsets to PE 0 (tracers.clock)
        self.clock_shared = True  # the PEs read one clock from the launcher's origin (clockping.setup)
        self.clock_measured = False  # the PEs measure their offsets (clockping.decide)
        self.clock_pending = 0  # on PE 0: PEs whose start measurement main waits for (clockping.wait_start)
        self.clock_waiter: Any = None  # on PE 0: main's greenlet while it waits
        self.reply_delay = 0  # on PE 0: the test-only fake ping reply delay, ns (clockping.reply_stamp)
        self.orig: dict[str, Any] = {}  # original charm4py callables we wrapped
        self.mapper: Any = None  # hints.runtime.charm_map.MappingConsumer when --hints is given
        self.entry_name: str | None = None
        self.msg_base = 0
        self.main_coll = MAIN_COLL
        self.send_row: Any = None
        self.exec_hook: Any = None  # EntryMethod._run as patched (the compiled hook: forget(obj) drops a chare)
        self.dispatch_state: list = [0, 0]
        self.hints_dir: str | None = None


ST = State()
