"""Clock offsets between ranks: a short ping exchange with rank 0 over gloo send/recv.

Each rank r > 0 sends PING_ROUNDS pings to rank 0, which answers each with its times of receipt
and reply (NTP's four timestamps); the median offset of the rounds with the shortest round trips
(less rank 0's time between receipt and reply) is the offset, half the longest of those round
trips its error bound. The tracer records its own clock and puts
the offsets measured at the start and at the end into the metadata; the reader corrects times.

PARADISE_FAKE_CLOCK_SKEW="rank:offset_ns:drift_ppm" makes one rank's tracer clock run off by
an offset plus a drift (tests of the alignment on one host). Does not import torch at module level.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

ENV_FAKE_SKEW = "PARADISE_FAKE_CLOCK_SKEW"
PING_ROUNDS = 96
"""Round trips per rank and measurement (a few ms on a quiet host, ~50 ms on a busy one)."""
BEST_ROUNDS = 9
"""The fastest round trips whose median offset counts (one fast but lopsided round misleads less)."""
END_TIMEOUT_S = 10.0
"""The end-of-run exchange gives up after this long (a peer that already left)."""
METHOD = "ping_min_rtt"


def fake_skew(rank: int) -> tuple[int, float] | None:
    """(offset_ns, drift in ns per ns) injected into this rank's clock, from ENV_FAKE_SKEW."""
    text = os.environ.get(ENV_FAKE_SKEW, "")
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) == 3 and parts[0].strip() == str(rank):
            return int(parts[1]), float(parts[2]) * 1e-6
    return None


def wall_clock(rank: int, origin_ns: int) -> Callable[[], int]:
    """This rank's clock in Unix ns: time.time_ns, or it with the injected skew (drift from origin_ns)."""
    skew = fake_skew(rank)
    if skew is None:
        return time.time_ns
    offset, drift = skew
    now = time.time_ns

    def skewed() -> int:
        t = now()
        return t + offset + int(drift * (t - origin_ns))

    return skewed


def exchange(now: Callable[[], int], rank: int, world: int, group: Any, send: Any, recv: Any,
             timeout_s: float | None = None) -> tuple[int, int] | None:
    """(offset_ns, error_ns) of this rank's `now` to rank 0's (0, 0 on rank 0); None when it failed.

    Every rank of `group` must call it. `send`/`recv` are torch.distributed's isend/irecv."""
    import datetime

    import torch

    wait = {} if timeout_s is None else {"timeout": datetime.timedelta(seconds=timeout_s)}
    ping = torch.zeros(2, dtype=torch.int64)
    pong = torch.zeros(2, dtype=torch.int64)
    stamps = pong.numpy()  # written through numpy: a torch setitem (us) would sit inside one leg only
    try:
        if rank == 0:
            for peer in range(1, world):
                for _ in range(PING_ROUNDS + 1):
                    recv(ping, src=peer, group=group).wait(**wait)
                    stamps[0] = now()  # received
                    stamps[1] = now()  # replying
                    send(pong, dst=peer, group=group).wait(**wait)
            return 0, 0
        rounds: list[tuple[int, int]] = []  # (round trip, offset)
        for k in range(PING_ROUNDS + 1):
            answer = recv(pong, src=0, group=group)  # posted first: the reply never waits for it
            t1 = now()
            send(ping, dst=0, group=group).wait(**wait)
            answer.wait(**wait)
            t4 = now()
            if k:  # round 0 also opens the connection: not counted
                # the round trip less rank 0's time in between; the offset of its midpoints
                t2, t3 = int(stamps[0]), int(stamps[1])
                rounds.append(((t4 - t1) - (t3 - t2), (t2 - t1 + t3 - t4) // 2))
    except Exception:  # noqa: BLE001 - a peer gone at the end: no measurement, the run goes on
        return None
    return best_offset(rounds)


def best_offset(rounds: list[tuple[int, int]]) -> tuple[int, int]:
    """(offset, error bound) from (round trip, offset) samples: the median offset of the BEST_ROUNDS
    fastest round trips (each is within half its round trip of the truth, so the median is within
    half the slowest of them)."""
    fastest = sorted(rounds)[:BEST_ROUNDS]
    offsets = sorted(o for _, o in fastest)
    return offsets[len(offsets) // 2], (fastest[-1][0] + 1) // 2
