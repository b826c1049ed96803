"""Clock offsets between ranks: a short ping exchange with rank 0 over gloo send/recv.

Each rank r > 0 sends PING_ROUNDS pings to rank 0, which answers each with its times of receipt
and reply (NTP's four timestamps); the round with the smallest round trip (less rank 0's time
between receipt and reply) gives the offset and its error bound (half that round trip). The tracer records its own clock and puts
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
PING_ROUNDS = 64
"""Round trips per rank and measurement: the fastest one counts (a few ms to ~50 ms on a busy host)."""
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
    buf = torch.zeros(2, dtype=torch.int64)
    try:
        if rank == 0:
            for peer in range(1, world):
                for _ in range(PING_ROUNDS + 1):
                    recv(buf, src=peer, group=group).wait(**wait)
                    buf[0] = now()  # received
                    buf[1] = now()  # replying
                    send(buf, dst=peer, group=group).wait(**wait)
            return 0, 0
        best: tuple[int, int] | None = None
        for k in range(PING_ROUNDS + 1):
            t1 = now()
            send(buf, dst=0, group=group).wait(**wait)
            recv(buf, src=0, group=group).wait(**wait)
            t4 = now()
            rtt = (t4 - t1) - int(buf[1] - buf[0])  # the round trip, less rank 0's time in between
            if k and (best is None or rtt < best[1]):  # round 0 also opens the connection: not counted
                best = ((int(buf[0]) - t1 + int(buf[1]) - t4) // 2, rtt)
    except Exception:  # noqa: BLE001 - a peer gone at the end: no measurement, the run goes on
        return None
    assert best is not None
    return best[0], (best[1] + 1) // 2
