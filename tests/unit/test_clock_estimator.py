"""The tracers' clock-offset estimator (tracers/clock.py), on round trips built here with known
offsets and delays."""

from __future__ import annotations

from tracers.clock import (
    BEST_ROUNDS,
    MORE_ROUNDS_S,
    PING_ROUNDS,
    SLOW_RTT_NS,
    best_offset,
    enough,
    sample,
    two_way,
)

OFFSET = 5_000  # PE 0's clock reads 5 us ahead of this PE's


def _ping(t1: int, out_ns: int, back_ns: int, hold_ns: int = 1_000) -> tuple[int, int, int]:
    """One round: out_ns to PE 0, hold_ns there, back_ns back (true delays)."""
    t2 = t1 + out_ns + OFFSET
    t3 = t2 + hold_ns
    t4 = t3 - OFFSET + back_ns
    return sample(t1, t2, t3, t4)


def test_a_symmetric_round_gives_the_offset_and_its_round_trip():
    rtt, offset, when = _ping(1_000_000, 7_000, 7_000)
    assert (rtt, offset) == (14_000, OFFSET)
    assert when == 1_000_000 + (7_000 + 1_000 + 7_000) // 2


def test_median_of_the_fastest_rounds_bounded_by_half_the_slowest_of_them():
    # lopsided slow rounds (queued one way) and 9 fast ones with small asymmetries
    slow = [_ping(10_000_000 * k, 40_000 + 1_000 * k, 8_000) for k in range(30)]
    fast = [_ping(500_000_000 + 10_000_000 * k, 8_000 + 200 * k, 8_000) for k in range(BEST_ROUNDS)]
    offset, error, when = best_offset(slow + fast)
    assert abs(offset - OFFSET) <= error
    assert error == (16_000 + 200 * (BEST_ROUNDS - 1) + 1) // 2  # half the slowest of the fastest 9
    assert when in {r[2] for r in fast}


def test_enough_waits_for_fast_round_trips_up_to_a_time_limit():
    slow = [(20_000_000, OFFSET, k) for k in range(PING_ROUNDS)]  # a crowded host: every round waited
    assert not enough(slow[:-1], 0)
    assert not enough(slow, 1_000_000_000)  # all within 2x of each other, but slow: go on
    assert enough(slow, int(MORE_ROUNDS_S * 1e9))  # ... until the time is spent
    fast = [(SLOW_RTT_NS // 50, OFFSET, k) for k in range(BEST_ROUNDS)]
    assert enough(slow + fast, 1_000_000_000)
    assert not enough(slow + fast[:-1], 1_000_000_000)


def test_two_way_cancels_the_bias_of_the_side_that_pings_on_a_drifting_clock():
    """This PE's clock drifts (400 ppm); the answering side stamps each receipt `late` after the ping
    arrived, whichever side it is: each direction alone is off by `late`/2, of opposite signs."""
    drift, late, hold = 400e-6, 12_000, 1_000

    def true_offset(t: int) -> float:  # add to this PE's time t to read PE 0's
        return OFFSET + drift * t

    def rounds(start: int, this_pings: bool) -> list[tuple[int, int, int]]:
        out = []
        for k in range(PING_ROUNDS):
            t1 = start + 200_000 * k  # the pinger's clock
            if this_pings:
                t2 = round(t1 + true_offset(t1)) + 30_000 + late
                out.append(sample(t1, t2, t2 + hold, t2 + hold - round(true_offset(t1)) + 30_000))
            else:  # PE 0 pings: its times t read t - offset on this PE
                here = t1 - round(true_offset(t1))
                t2 = here + 30_000 + late
                out.append(sample(t1, t2, t2 + hold, t2 + hold + round(true_offset(here)) + 30_000))
        return out

    forward = best_offset(rounds(1_000_000_000, True))
    reverse = best_offset(rounds(1_050_000_000, False))
    assert abs(forward[0] - true_offset(forward[2])) >= late // 2 - 100  # one way alone is biased
    offset, error, when = two_way(forward, reverse)
    assert abs(offset - true_offset(when)) <= 100, (offset, true_offset(when))
    assert error == (forward[1] + reverse[1] + 1) // 2 and abs(offset - true_offset(when)) <= error
