"""Clock alignment of the charm tracer on real `charmrun +p2` runs: PE 1's clock is skewed on
purpose (PARADISE_FAKE_CLOCK_SKEW, both recorders), the trace must measure the skew within 20 us
(or within its stated error, on a machine too busy for that) at the start and at the end and read
back with no message received before it was sent. The `slow-pings` runs reproduce a busy machine
deterministically: PE 0's ping answers are backdated (PARADISE_FAKE_PING_REPLY_DELAY_NS), so the
ping offsets are half that delay off (within the error they state, longer than a message's
one-way latency) and only the refinement by the messages puts every exec after its send."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import time

import duckdb
import pytest

from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.store import open_trace
from paradise.store.clock import clock_summary, file_corrections
from paradise.store.clockrefine import measure
from tests.conftest import bin_path
from tests.integration.charm_helpers import PROGRAMS, require_ok, trace_charm

pytestmark = pytest.mark.timeout(300)

SKEW_NS, DRIFT_PPM = -50_000_000, 400.0  # PE 1's clock: 50 ms behind, gaining 400 us per second
TOLERANCE_NS = 20_000
HOPS = 3000
REPLY_DELAY_NS = 600_000
"""slow-pings: PE 0's answers backdated 600 us, so every round trip looks 600 us longer on the way
back: the ping offsets are 300 us off (a one-way hop of pingpong takes well under that), the round
trips stay under tracers.clock.SLOW_RTT_NS (no extra seconds of pinging)."""


@pytest.fixture(scope="module", params=[("1", 0), ("0", 0), ("1", REPLY_DELAY_NS), ("0", REPLY_DELAY_NS)],
                ids=["native", "python", "native-slow-pings", "python-slow-pings"])
def skewed(request, tmp_path_factory):
    """pingpong.py traced with PE 1's clock skewed, with the native and with the pure-Python recorder,
    with quick and with (deterministically) slow, lopsided pings."""
    native, delay = request.param
    mp = pytest.MonkeyPatch()
    mp.setenv("PARADISE_NATIVE_RECORDER", native)
    mp.setenv("PARADISE_FAKE_CLOCK_SKEW", f"1:{SKEW_NS}:{DRIFT_PPM}")
    if delay:
        mp.setenv("PARADISE_FAKE_PING_REPLY_DELAY_NS", str(delay))
    out = tmp_path_factory.mktemp(f"charmclock-{native}-{delay}") / "trace"
    try:
        proc = trace_charm(out, PROGRAMS / "pingpong.py", str(HOPS))
    finally:
        mp.undo()
    require_ok(proc)
    assert "RESULT ok" in proc.stdout
    recorder = open_trace(out).metadata["extra"]["recorder"]
    assert recorder == ("native" if native == "1" else "python (PARADISE_NATIVE_RECORDER=0)")
    return out, delay


def test_a_skewed_trace_is_read_not_summarized(skewed):
    """Files with clock offsets carry no summary (paradise.format.summary): the overview reads the rows,
    with their times corrected."""
    trace = open_trace(skewed[0])
    assert trace.corrections
    assert trace.summaries(trace.sql_files()) is None
    assert all(trace.summary(f) is None for f in trace.sql_files())


def _injected_offset(t_ns: int) -> float:
    """What must be added to PE 1's trace time t to read PE 0's clock. The skew is SKEW_NS +
    drift * w at true time w since the origin, and t = w + skew: w = (t - SKEW_NS) / (1 + drift)."""
    drift = DRIFT_PPM * 1e-6
    return -(SKEW_NS + drift * (t_ns - SKEW_NS) / (1 + drift))


def test_offsets_measured_within_20us_of_the_injected_skew(skewed):
    skewed, delay = skewed
    files = {m["pe"]: m for m in open_trace(skewed).file_metadata}
    pe1 = files[1]["clock"]["offsets"]["1"]
    assert files[1]["clock"]["method"] == "ping_min_rtt"
    assert pe1["t_end"] > pe1["t_start"]
    # within 20 us, or within the error the trace states where a busy machine kept every ping slow
    # (each round trip bounds its offset's error by half its length: a bound that must hold)
    within = max(TOLERANCE_NS, pe1["error_ns"])
    assert pe1["error_ns"] < abs(SKEW_NS) / 10, pe1  # the skew is measured, not drowned in the error
    assert abs(pe1["start_ns"] - _injected_offset(pe1["t_start"])) <= within, pe1
    assert abs(pe1["end_ns"] - _injected_offset(pe1["t_end"])) <= within, pe1
    assert 0 < pe1["error_ns"] == files[1]["clock"]["residual_ns"]
    pe0 = files[0]["clock"]["offsets"]["0"]
    assert (pe0["start_ns"], pe0["end_ns"]) == (0, 0)
    if delay:  # the backdated answers: every offset delay/2 off, and the stated error covers it
        assert pe1["error_ns"] >= delay // 2
        assert abs(pe1["start_ns"] - _injected_offset(pe1["t_start"])) >= delay // 2 - TOLERANCE_NS, pe1


def test_refined_offsets_within_20us_of_the_injected_skew(skewed):
    """The ping offsets moved by the messages (one constant shift per PE, the measured drift kept):
    within 20 us of the injected skew at the start and at the end, or within what the two bounds
    allow there (the ping's error plus the shift: where a crowded host made the start and end
    measurements err differently, the drift is the ping's). With the slow pings both ends err by
    the same delay/2, and the shift takes it out."""
    skewed, delay = skewed
    clock = open_trace(skewed).metadata["clock"]
    ref, pe1 = clock["refinement"], clock["offsets"]["1"]
    assert ref["status"] == "refined" and clock["final_method"] == "ping_min_rtt+message_bounds", ref
    got = ref["pes"]["1"]
    assert got["lo_ns"] <= got["shift_ns"] <= got["hi_ns"] and got["error_ns"] <= pe1["error_ns"], ref
    within = max(TOLERANCE_NS, pe1["error_ns"] + abs(got["shift_ns"]))
    if delay:
        within = max(TOLERANCE_NS, delay // 4)  # the ping's 300 us taken out
        assert got["error_ns"] < delay // 2, got  # the messages shrink the pings' error (>= delay/2)
    assert abs(pe1["start_ns"] + got["shift_ns"] - _injected_offset(pe1["t_start"])) <= within, (pe1, got)
    assert abs(pe1["end_ns"] + got["shift_ns"] - _injected_offset(pe1["t_end"])) <= within, (pe1, got)


def test_compaction_stored_the_refinement_the_reader_measures(skewed):
    """The launcher's compaction measured the refinement once and stored it in both PEs' files (the
    trace-wide outcome in each, PE 1's shift in PE 1's alone): what the reader would measure over
    the Parquet files, and what open_trace rebuilds and applies."""
    skewed, _ = skewed
    trace = open_trace(skewed)
    stored = {m["pe"]: m["clock"].get("refinement") for m in trace.file_metadata}
    clock = clock_summary(trace.files, trace.file_metadata)
    measured = measure(trace.sql_files(), file_corrections(trace.files, trace.file_metadata), clock)
    assert measured == trace.metadata["clock"]["refinement"]
    shared = {k: v for k, v in measured.items() if k != "pes"}
    if measured["status"] == "refined":
        assert stored == {0: {**shared, "pes": {}}, 1: {**shared, "pes": {"1": measured["pes"]["1"]}}}
    else:
        assert stored == {0: shared, 1: shared}


# Every message sent on one PE and executed on the other: its execution cannot start before its send.
PAIRS = """
SELECT count(*) AS pairs, count(*) FILTER (WHERE e.t0 < s.t0) AS impossible
FROM {src} s JOIN {src} e ON s.kind = 'send' AND e.kind = 'exec' AND e.msg = s.msg AND e.pe <> s.pe
"""


def test_corrected_trace_has_no_message_received_before_it_was_sent(skewed):
    skewed, delay = skewed
    raw = duckdb.sql(PAIRS.format(src=f"read_parquet('{skewed}/*.parquet', union_by_name = true)")).fetchall()[0]
    trace = open_trace(skewed)
    with DuckDBEngine(trace) as eng:
        fixed = eng.sql(PAIRS.format(src="events")).to_pylist()[0]
    assert raw[0] == fixed["pairs"] >= HOPS  # every hop crosses PEs (elements 0 and 1 on PEs 0 and 1)
    assert raw[1] > 0  # the skew is visible in the raw times: the check can fail
    assert fixed["impossible"] == 0, (fixed, trace.metadata["clock"])
    if delay:  # the pings' offsets alone (the correction before the refinement) leave messages backward
        pinged = dataclasses.replace(trace, corrections=file_corrections(trace.files, trace.file_metadata))
        with DuckDBEngine(pinged) as eng:
            before = eng.sql(PAIRS.format(src="events")).to_pylist()[0]
        assert before["impossible"] > 0, before
        assert before["impossible"] == trace.metadata["clock"]["refinement"]["backward_before"]


def test_info_shows_the_offsets_and_their_error(skewed):
    skewed, _ = skewed
    proc = subprocess.run([bin_path("paradise"), "info", "--json", str(skewed)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    clock = json.loads(proc.stdout)["clock"]
    assert clock["method"] == "ping_min_rtt" and set(clock["offsets"]) == {"0", "1"}
    assert clock["residual_ns"] == max(e["error_ns"] for e in clock["offsets"].values()) > 0
    text = subprocess.run([bin_path("paradise"), "info", str(skewed)], capture_output=True, text=True,
                          timeout=120).stdout
    assert "clock: ping_min_rtt" in text and "ppm" in text
    assert clock["refinement"]["status"] == "refined" and "refined by message_bounds" in text


def test_one_host_without_skew_measures_nothing(tmp_path):
    """One host and the launcher's origin: every PE reads the same clock, no pings, nothing to correct."""
    assert "PARADISE_FAKE_CLOCK_SKEW" not in os.environ
    out = tmp_path / "trace"
    proc = trace_charm(out, PROGRAMS / "pingpong.py", "10")
    require_ok(proc)
    trace = open_trace(out)
    assert [m["clock"] for m in trace.file_metadata] == [{"method": "host-monotonic", "residual_ns": 0}] * 2
    assert trace.corrections == {}


def test_launcher_on_another_host_places_the_origin_through_the_wall_clock(tmp_path):
    """A PE on another host than the launcher cannot use the launcher's CLOCK_MONOTONIC origin (here
    a meaningless 1): it places the origin through the wall clocks, so times start near 0."""
    from tracers.charm.launch import charm_command

    out = tmp_path / "trace"
    t_start = time.time_ns()
    env = dict(os.environ, PARADISE_TRACE=str(out), PARADISE_TRACE_ORIGIN_NS="1",
               PARADISE_TRACE_ORIGIN_UNIX_NS=str(t_start), PARADISE_TRACE_ORIGIN_HOST="another-host.invalid")
    env.pop("PARADISE_FAKE_CLOCK_SKEW", None)
    proc = subprocess.run(charm_command(PROGRAMS / "pingpong.py", ["10"], 2), env=env, capture_output=True,
                          text=True, timeout=120)
    require_ok(proc)
    wall = time.time_ns() - t_start
    open_trace(out)  # no launcher ran: the reader converts the PEs' spools
    span = duckdb.sql(f"SELECT min(t0), max(coalesce(t1, t0)) FROM read_parquet('{out}/*.parquet')").fetchall()[0]
    assert 0 <= span[0] <= span[1] <= wall, (span, wall)
