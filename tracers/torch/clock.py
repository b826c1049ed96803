"""Clock offsets between ranks: the ping exchange with rank 0 over gloo send/recv.

The estimator, the metadata entry and the injected skew of tests are tracers/clock.py's (shared
with the charm tracer). Does not import torch at module level.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from tracers.clock import (
    END_TIMEOUT_S,
    ENV_FAKE_SKEW,
    METHOD,
    PING_ROUNDS,
    best_offset,
    fake_skew,
    sample,
    skewed,
    two_way,
)

__all__ = ["END_TIMEOUT_S", "ENV_FAKE_SKEW", "METHOD", "exchange", "fake_skew", "reader", "wall_clock"]


def wall_clock(rank: int, origin_ns: int) -> Callable[[], int]:
    """This rank's clock in Unix ns: time.time_ns, or it with the injected skew (drift from origin_ns)."""
    skew = fake_skew(rank)
    if skew is None:
        return time.time_ns
    return skewed(time.time_ns, skew[0], skew[1], origin_ns)


def reader(tr: Any) -> tuple[Callable[[], int], int]:
    """(read, base) with read() - base equal to tr.now(), for the hooks' per-step clock reads:
    time.time_ns (a C call: no Python frame per read) and the tracer's base when the tracer keeps
    Tracer.now's plain clock; tr.now and 0 when it has another (an injected skew, a subclass)."""
    from tracers.torch.tracer import Tracer

    if type(tr).now is Tracer.now and "now" not in vars(tr):
        return time.time_ns, tr._base
    return tr.now, 0


def exchange(now: Callable[[], int], rank: int, world: int, group: Any, send: Any, recv: Any,
             timeout_s: float | None = None) -> tuple[int, int, int] | None:
    """(offset_ns, error_ns, when) of this rank's `now` to rank 0's, measured at its time `when`
    (0, 0, now on rank 0); None when it failed.

    Every rank of `group` must call it. Rank 0 takes the ranks in turn: rank p pings rank 0, then
    rank 0 pings rank p and sends p its estimate; p averages the two directions (tracers.clock.two_way).
    `send`/`recv` are torch.distributed's isend/irecv."""
    import datetime

    import torch

    wait = {} if timeout_s is None else {"timeout": datetime.timedelta(seconds=timeout_s)}
    try:
        if rank == 0:
            for peer in range(1, world):
                _answer(now, peer, group, send, recv, wait)
                reverse = torch.tensor(best_offset(_ping(now, peer, group, send, recv, wait)), dtype=torch.int64)
                send(reverse, dst=peer, group=group).wait(**wait)
            return 0, 0, now()
        forward = best_offset(_ping(now, 0, group, send, recv, wait))
        _answer(now, 0, group, send, recv, wait)
        reverse = torch.zeros(3, dtype=torch.int64)
        recv(reverse, src=0, group=group).wait(**wait)
    except Exception:  # noqa: BLE001 - a peer gone at the end: no measurement, the run goes on
        return None
    return two_way(forward, tuple(int(v) for v in reverse.tolist()))  # type: ignore[arg-type]


def _ping(now: Callable[[], int], peer: int, group: Any, send: Any, recv: Any,
          wait: dict[str, Any]) -> list[tuple[int, int, int]]:
    """PING_ROUNDS counted round trips to `peer` (which runs _answer): (round trip, offset, when)."""
    import torch

    ping = torch.zeros(2, dtype=torch.int64)
    pong = torch.zeros(2, dtype=torch.int64)
    stamps = pong.numpy()
    rounds: list[tuple[int, int, int]] = []
    for k in range(PING_ROUNDS + 1):
        answer = recv(pong, src=peer, group=group)  # posted first: the reply never waits for it
        t1 = now()
        send(ping, dst=peer, group=group).wait(**wait)
        answer.wait(**wait)
        t4 = now()
        if k:  # round 0 also opens the connection: not counted
            rounds.append(sample(t1, int(stamps[0]), int(stamps[1]), t4))
    return rounds


def _answer(now: Callable[[], int], peer: int, group: Any, send: Any, recv: Any, wait: dict[str, Any]) -> None:
    """Answers `peer`'s PING_ROUNDS + 1 pings with this rank's times of receipt and reply."""
    import torch

    ping = torch.zeros(2, dtype=torch.int64)
    pong = torch.zeros(2, dtype=torch.int64)
    stamps = pong.numpy()  # written through numpy: a torch setitem (us) would sit inside one leg only
    for _ in range(PING_ROUNDS + 1):
        recv(ping, src=peer, group=group).wait(**wait)
        stamps[0] = now()  # received
        stamps[1] = now()  # replying
        send(pong, dst=peer, group=group).wait(**wait)
