"""Clock offsets of each PE to PE 0 for the charm tracer, measured at the start and at the end.

When the PEs do not share one clock (more than one host, no launcher origin, or an injected skew),
every PE p > 0 pings PE 0 through the tracer's own Group (lifecycle._TracerGroup) one round trip
at a time, PING_ROUNDS + 1 times (round 0 not counted), once when the Group is made and again
when the program exits; tracers/clock.py turns the round trips into the offset and its error and
the `clock.offsets` metadata the reader applies (paradise/store/clock.py).
"""

from __future__ import annotations

import os
import time
from typing import Any

from tracers.charm._state import SKEWED, ST, clock
from tracers.clock import (
    ENV_FAKE_SKEW,
    METHOD,
    PING_ROUNDS,
    best_offset,
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
    skew = fake_skew(ST.pe)
    if skew is not None:
        install_skew(*skew)


def decide(charm: Any) -> bool:
    """Whether the PEs measure their offsets, once charm4py knows the hosts (the tracer's Group is made):
    when they do not share one clock (more than one host, no launcher origin, or an injected skew)."""
    ST.clock_measured = ST.pes > 1 and (charm.numHosts() > 1 or not ST.clock_shared)
    ST.clock_meta = {"method": METHOD, "residual_ns": None} if ST.clock_measured else {"method": ONE_CLOCK,
                                                                                       "residual_ns": 0}
    if ST.writer is not None:
        ST.writer.set_metadata(clock=dict(ST.clock_meta))
    return ST.clock_measured


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
        self.t1 = 0
        self.rounds: list[tuple[int, int, int]] = []

    def begin(self, when: str) -> None:
        self.when, self.k, self.rounds = when, 0, []

    def answered(self, t2: int, t3: int, t4: int) -> bool:
        """Counts one answer (PE 0's receipt t2 and reply t3, received at t4); True while rounds remain."""
        if self.k:  # round 0 also warms the path: not counted
            self.rounds.append(sample(self.t1, t2, t3, t4))
        self.k += 1
        return self.k <= PING_ROUNDS

    def finish(self) -> str:
        """Records the measurement; returns which one it was."""
        when, self.when = self.when, None
        record(when or "start", *best_offset(self.rounds))
        return when or "start"
