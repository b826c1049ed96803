"""Clock offsets to PE 0 (rank 0), shared by the charm and torch tracers: the estimate from ping
round trips, the `clock` metadata it goes into, and the skew tests inject.

A PE p > 0 sends PING_ROUNDS pings to PE 0, which answers each with its times of receipt and
reply (NTP's four timestamps t1..t4); the median offset of the BEST_ROUNDS rounds with the
shortest round trips (less PE 0's time between receipt and reply) is the offset, half the
slowest of those round trips its error bound. Where PE 0 can also ping the PE (the torch tracer),
both directions are measured and averaged (two_way): one direction alone carries a bias that
depends on which side pings (its sign the same run after run). The tracers record their own clock
and write the offsets measured at the start and at the end into the metadata; the reader corrects
the times (paradise/store/clock.py).

PARADISE_FAKE_CLOCK_SKEW="pe:offset_ns:drift_ppm" (comma-separated for several) makes one PE's
(rank's) tracer clock run off by an offset plus a drift: the alignment's tests on one host.
PARADISE_FAKE_PING_REPLY_DELAY_NS=D makes PE 0's answers say they left D earlier than they did: the
round trips of a crowded host, where the reply path waits for a CPU (the offset is D/2 off, within
the error it states), for the charm tracer's tests of the message-bound refinement.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

ENV_FAKE_SKEW = "PARADISE_FAKE_CLOCK_SKEW"
ENV_FAKE_REPLY_DELAY = "PARADISE_FAKE_PING_REPLY_DELAY_NS"
PING_ROUNDS = 96
"""Counted round trips per PE and measurement (a few ms on a quiet host, ~50 ms on a busy one)."""
BEST_ROUNDS = 9
"""The fastest round trips whose median offset counts (one fast but lopsided round misleads less)."""
MORE_ROUNDS_S = 5.0
"""A PE that may go on pinging (the charm tracer's: PE 0 answers any number of pings) does so after
PING_ROUNDS, for up to this long, until BEST_ROUNDS round trips are within 2x the fastest and the
fastest is under SLOW_RTT_NS: on a crowded host round trips wait for a CPU (20-40 ms each for
seconds on end on a 2-core machine at a load of 12), the fast ones come in bursts."""
SLOW_RTT_NS = 1_000_000
"""A round trip slower than this waited for a CPU or a queue (hosts of one cluster answer in ~0.1 ms)."""
END_TIMEOUT_S = 10.0
"""The end-of-run exchange gives up after this long (a peer that already left)."""
METHOD = "ping_min_rtt"
"""`clock.method` of a trace whose PEs measured their offsets."""


def fake_skew(pe: int) -> tuple[int, float] | None:
    """(offset_ns, drift in ns per ns) injected into this PE's clock, from ENV_FAKE_SKEW."""
    text = os.environ.get(ENV_FAKE_SKEW, "")
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) == 3 and parts[0].strip() == str(pe):
            return int(parts[1]), float(parts[2]) * 1e-6
    return None


def fake_reply_delay() -> int:
    """ns by which PE 0 backdates its ping answers' reply time (ENV_FAKE_REPLY_DELAY; 0 without it)."""
    text = os.environ.get(ENV_FAKE_REPLY_DELAY, "").strip()
    return max(0, int(text)) if text.isdigit() else 0


def skewed(now: Callable[[], int], offset: int, drift: float, origin: int) -> Callable[[], int]:
    """`now` run off by `offset` plus `drift` per ns since `origin` (the arithmetic the native
    recorder's clock repeats, tracers/charm/_recorder.c: set_fake_skew)."""

    def clock() -> int:
        t = now()
        return t + offset + int(drift * (t - origin))

    return clock


def sample(t1: int, t2: int, t3: int, t4: int) -> tuple[int, int, int]:
    """(round trip, offset, when) of one ping: sent at t1, received by PE 0 at t2, answered at t3
    (PE 0's clock), the answer received at t4. The round trip less PE 0's time in between; the
    offset of the midpoints (what to add to this PE's clock to read PE 0's); when: the midpoint on
    this PE's clock (a drifting clock's offset belongs to the moment it was measured)."""
    return (t4 - t1) - (t3 - t2), (t2 - t1 + t3 - t4) // 2, (t1 + t4) // 2


def best_offset(rounds: list[tuple[int, int, int]]) -> tuple[int, int, int]:
    """(offset, error bound, when) from (round trip, offset, when) samples: the median offset of the
    BEST_ROUNDS fastest round trips (each is within half its round trip of the truth, so the median
    is within half the slowest of them) and when that sample was taken."""
    fastest = sorted(rounds)[:BEST_ROUNDS]
    median = sorted(fastest, key=lambda r: r[1])[len(fastest) // 2]
    return median[1], (fastest[-1][0] + 1) // 2, median[2]


def two_way(forward: tuple[int, int, int], reverse: tuple[int, int, int]) -> tuple[int, int, int]:
    """(offset, error bound, when) on this PE's clock from `forward` (this PE pinged PE 0: its
    best_offset) and `reverse` (PE 0 pinged this PE right after: best_offset of PE 0's clock to this
    PE's, on PE 0's clock). The mean of the two cancels the bias that comes with a side (see above);
    each is within its bound, so the mean is within the mean bound. A drifting clock's mean offset
    belongs to the mean of the two moments, the reverse one read on this PE's clock."""
    when_reverse = reverse[2] + reverse[0]  # PE 0's time t is t + reverse offset on this PE's clock
    return (forward[0] - reverse[0]) // 2, (forward[1] + reverse[1] + 1) // 2, (forward[2] + when_reverse) // 2


def enough(rounds: list[tuple[int, int, int]], elapsed_ns: int) -> bool:
    """Whether best_offset has what it needs: PING_ROUNDS samples with BEST_ROUNDS of them within 2x
    the fastest round trip (itself under SLOW_RTT_NS), or PING_ROUNDS samples and MORE_ROUNDS_S spent."""
    if len(rounds) < PING_ROUNDS:
        return False
    if elapsed_ns >= MORE_ROUNDS_S * 1e9:
        return True
    fastest = min(r[0] for r in rounds)
    return fastest <= SLOW_RTT_NS and sum(r[0] <= 2 * fastest for r in rounds) >= BEST_ROUNDS


def record_offset(offsets: dict[str, dict[str, int | None]], pe: int, when: str, offset_ns: int, error_ns: int,
                  at: int) -> dict[str, Any]:
    """Adds PE `pe`'s offset measured at its trace time `at` (`when`: start or end) to `offsets`;
    returns the `clock` metadata that carries them (docs/trace-format.md#clock-offsets)."""
    entry = offsets.setdefault(str(pe), {"t_start": at, "start_ns": offset_ns, "t_end": None, "end_ns": None,
                                         "error_ns": error_ns})
    if when == "end":
        entry.update(t_end=at, end_ns=offset_ns, error_ns=max(error_ns, entry["error_ns"] or 0))
    return {"method": METHOD, "residual_ns": entry["error_ns"], "offsets": offsets}
