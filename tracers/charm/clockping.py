"""Clock offsets of each PE to PE 0 for the charm tracer, measured at the start and at the end.

When the PEs do not share one clock (more than one host, no launcher origin, or an injected skew),
every PE p > 0 pings PE 0 through the tracer's own Group (lifecycle._TracerGroup), one round trip
at a time, PING_ROUNDS times after a first uncounted one (more on a crowded host: tracers.clock.enough),
once when the Group is made (PE 0's main waits for it) and again when the program exits;
tracers/clock.py turns the round trips into the offset and its error and the `clock.offsets`
metadata the reader applies (paradise/store/clock.py).
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from tracers.charm._state import SKEWED, ST, clock
from tracers.clock import (
    ENV_FAKE_SKEW,
    METHOD,
    best_offset,
    enough,
    fake_reply_delay,
    fake_skew,
    record_offset,
    sample,
    skewed,
)

ONE_CLOCK = "host-monotonic"
"""`clock.method` when every PE reads the same CLOCK_MONOTONIC from the launcher's origin: nothing to correct."""


def setup(launcher_origin: bool) -> None:
    """Once the PE and the origin are known (lifecycle.open_writer): the injected skew, if any."""
    ST.clock_shared = launcher_origin and ENV_FAKE_SKEW not in os.environ
    ST.reply_delay = fake_reply_delay() if ST.pe == 0 else 0
    skew = fake_skew(ST.pe)
    if skew is not None:
        install_skew(*skew)


def decide(charm: Any) -> bool:
    """Whether the PEs measure their offsets, once charm4py knows the hosts (the tracer's Group is made):
    when they do not share one clock (more than one host, no launcher origin, or an injected skew)."""
    ST.clock_measured = ST.pes > 1 and (charm.numHosts() > 1 or not ST.clock_shared)
    ST.clock_pending = ST.pes - 1 if ST.clock_measured and ST.pe == 0 else 0
    ST.clock_meta = {"method": METHOD, "residual_ns": None} if ST.clock_measured else {"method": ONE_CLOCK,
                                                                                       "residual_ns": 0}
    if ST.writer is not None:
        ST.writer.set_metadata(clock=dict(ST.clock_meta))
    return ST.clock_measured


def after_start(entry: Any) -> Any:
    """The program's entry point (a function or a mainchare class), made to wait in PE 0's main
    until every PE measured its start offset: the pings run while the PEs are idle, not queued
    behind the program's messages (and, on a crowded host, its busy processes)."""
    if hasattr(entry, "mro"):
        init = entry.__init__

        @functools.wraps(init)
        def __init__(self, args):  # noqa: N807 - the mainchare's constructor
            wait_start()
            init(self, args)

        entry.__init__ = __init__
        return entry
    if not callable(entry):
        return entry

    @functools.wraps(entry)
    def main(args):
        wait_start()
        return entry(args)

    return main


def wait_start() -> None:
    """In PE 0's main (a coroutine), before the program's code: suspends it until started() resumes it."""
    if ST.clock_pending <= 0:
        return
    from charm4py import charm
    from greenlet import getcurrent

    ST.clock_waiter = getcurrent()
    charm.threadMgr.pauseThread()


def started(all_pes: bool = False) -> None:
    """On PE 0: one PE (or, on a time-out, every PE) finished its start measurement."""
    ST.clock_pending = 0 if all_pes else ST.clock_pending - 1
    if ST.clock_pending <= 0 and ST.clock_waiter is not None:
        from charm4py import charm

        waiter, ST.clock_waiter = ST.clock_waiter, None
        charm.threadMgr.resumeThread(waiter, None)


def install_skew(offset_ns: int, drift: float) -> None:
    """This PE's clock (both recorders') runs off by offset_ns plus drift per ns since the origin."""
    SKEWED[0] = skewed(time.monotonic_ns, offset_ns, drift, ST.origin)
    try:
        from tracers.charm._recorder import set_fake_skew
    except ImportError:  # no native recorder built: the Python one reads SKEWED only
        return
    set_fake_skew(offset_ns, drift, ST.origin)


def now() -> int:
    """Trace time of this instant on this PE's clock."""
    return clock() - ST.origin


def reply_stamp() -> int:
    """PE 0's time of reply to a ping: now, less the test-only fake reply delay (tracers.clock)."""
    return now() - ST.reply_delay


def record(when: str, offset_ns: int, error_ns: int, at: int | None = None) -> None:
    """This PE's offset to PE 0 measured at its trace time `at` (now by default; `when`: start or
    end) into the metadata."""
    ST.clock_meta = record_offset(ST.clock_offsets, ST.pe, when, offset_ns, error_ns, now() if at is None else at)
    if ST.writer is not None:
        ST.writer.set_metadata(clock=dict(ST.clock_meta))


class Pings:
    """One PE's side of a measurement in progress: the rounds so far and what comes after."""

    def __init__(self) -> None:
        self.when: str | None = None  # start / end while a measurement runs
        self.end_wanted = False  # the end measurement was asked for while the start one ran
        self.k = 0
        self.t1 = self.t_begin = 0
        self.rounds: list[tuple[int, int, int]] = []

    def begin(self, when: str) -> None:
        self.when, self.k, self.rounds, self.t_begin = when, 0, [], now()

    def answered(self, t2: int, t3: int, t4: int) -> bool:
        """Counts one answer (PE 0's receipt t2 and reply t3, received at t4); True while rounds remain."""
        if self.k:  # round 0 also warms the path: not counted
            self.rounds.append(sample(self.t1, t2, t3, t4))
        self.k += 1
        return not enough(self.rounds, t4 - self.t_begin)

    def finish(self) -> str:
        """Records the measurement; returns which one it was."""
        when, self.when = self.when, None
        record(when or "start", *best_offset(self.rounds))
        return when or "start"
