"""The ping offsets refined by the messages (paradise.store.clockrefine): per-PE files with known true
clocks, ping offsets off by a known amount within their stated error, and messages both ways. The
expected shifts are computed here from the raw rows (Floyd-Warshall over the bounds, another
algorithm than the store's Bellman-Ford)."""

from __future__ import annotations

import dataclasses
import json
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paradise.cli.merge import merge_trace
from paradise.engines.dask_engine import run_group
from paradise.engines.duckdb_engine import DuckDBEngine
from paradise.format import conform, make_metadata
from paradise.store import open_trace
from paradise.store.clock import file_corrections
from paradise.store.clockrefine import MIN_LATENCY_NS, solve
from tests.conftest import bin_path

BACKWARD = """
SELECT count(*) AS pairs, count(*) FILTER (WHERE e.t0 < s.t0) AS backward
FROM events s JOIN events e ON s.kind = 'send' AND e.kind = 'exec' AND e.msg = s.msg AND e.pe <> s.pe
"""


def _clock(pe: int, start_ns: int, error_ns: int, t_end: int = 50_000_000) -> dict:
    entry = {"t_start": 1_000, "start_ns": start_ns, "t_end": t_end, "end_ns": start_ns, "error_ns": error_ns}
    return {"method": "ping_min_rtt", "residual_ns": error_ns, "offsets": {str(pe): entry}}


def _write(path, pe: int, rows: list[tuple[str, int, int]], clock: dict) -> None:
    """rows: (kind, t0 on this PE's own clock, msg)."""
    table = conform(pa.table({
        "kind": [k for k, _, _ in rows], "pe": pa.array([pe] * len(rows), pa.int32()),
        "t0": pa.array([t for _, t, _ in rows], pa.int64()), "t1": pa.array([None] * len(rows), pa.int64()),
        "msg": pa.array([m for _, _, m in rows], pa.int64()),
    }))
    meta = make_metadata(source="synthetic", pe=pe, pes=3, complete=True, clock=clock)
    pq.write_table(table.replace_schema_metadata(meta), path / f"pe-{pe:05d}.parquet")


# True offsets (add to the PE's own clock to read PE 0's) and what the pings said, within their error.
TRUE = {0: 0, 1: 2_000_000, 2: -7_000_000}
PING = {1: (2_000_000 - 300_000, 400_000), 2: (-7_000_000 + 150_000, 200_000)}  # (start_ns, error_ns)
# Messages (src, dst, true send time, one-way latency): both ways between 0 and 1 and between 1 and 2;
# none between 0 and 2, so PE 2 is bounded through PE 1.
MESSAGES = [(0, 1, 5_000_000, 40_000), (1, 0, 6_000_000, 25_000), (0, 1, 9_000_000, 90_000),
            (1, 2, 11_000_000, 30_000), (2, 1, 12_000_000, 60_000), (2, 1, 20_000_000, 35_000)]


def _rows(messages) -> dict[int, list[tuple[str, int, int]]]:
    rows: dict[int, list] = {0: [], 1: [], 2: []}
    for i, (src, dst, t, lat) in enumerate(messages):
        rows[src].append(("send", t - TRUE[src], i + 1))
        rows[dst].append(("exec", t + lat - TRUE[dst], i + 1))
    return rows


@pytest.fixture
def three(tmp_path):
    for pe, rows in _rows(MESSAGES).items():
        _write(tmp_path, pe, sorted(rows, key=lambda r: r[1]), _clock(pe, *PING.get(pe, (0, 0))))
    return tmp_path


def _expected_intervals(messages, ping) -> dict[int, tuple[int, int]] | None:
    """[lo, hi] per PE of the shift added to its ping offset, by Floyd-Warshall over the bounds."""
    pes = [0, *sorted(ping)]
    inf = float("inf")
    d = {(a, b): (0 if a == b else inf) for a in pes for b in pes}  # x_b - x_a <= d[a, b]
    for pe, (_, err) in ping.items():
        d[0, pe] = min(d[0, pe], err)
        d[pe, 0] = min(d[pe, 0], err)
    for src, dst, t, lat in messages:  # corrected send and exec times by the pings alone
        send = t - TRUE[src] + ping.get(src, (0, 0))[0]
        exe = t + lat - TRUE[dst] + ping.get(dst, (0, 0))[0]
        d[dst, src] = min(d[dst, src], exe - send - MIN_LATENCY_NS)
    for k in pes:
        for a in pes:
            for b in pes:
                d[a, b] = min(d[a, b], d[a, k] + d[k, b])
    if any(d[a, a] < 0 for a in pes):
        return None
    return {pe: (-d[pe, 0], d[0, pe]) for pe in ping}


def test_shifts_are_the_middle_of_what_messages_and_pings_allow(three):
    trace = open_trace(three)
    ref = trace.metadata["clock"]["refinement"]
    assert ref["status"] == "refined" and trace.metadata["clock"]["final_method"] == "ping_min_rtt+message_bounds"
    expected = _expected_intervals(MESSAGES, PING)
    for pe, (lo, hi) in expected.items():
        got = ref["pes"][str(pe)]
        assert (got["lo_ns"], got["hi_ns"]) == (lo, hi)
        assert got["shift_ns"] == (lo + hi + 1) // 2  # the middle, to the ns
        # the refined offset is within its stated error of the truth, and that error is below the ping's
        assert abs(PING[pe][0] + got["shift_ns"] - TRUE[pe]) <= got["error_ns"] < PING[pe][1]
    assert ref["messages"] == len(MESSAGES)


def _backward_by_pings(messages, ping) -> int:
    """Messages whose exec starts before their send once each PE's ping offset is added."""
    return sum(t + lat - TRUE[dst] + ping.get(dst, (0, 0))[0] < t - TRUE[src] + ping.get(src, (0, 0))[0]
               for src, dst, t, lat in messages)


def test_refined_view_has_no_message_received_before_it_was_sent(three):
    trace = open_trace(three)
    pinged = dataclasses.replace(trace, corrections=file_corrections(trace.files, trace.file_metadata))
    backward = _backward_by_pings(MESSAGES, PING)
    assert backward > 0  # the pings' offsets alone leave messages backward: the check can fail
    with DuckDBEngine(pinged) as before, DuckDBEngine(trace) as after:
        assert before.sql(BACKWARD).to_pylist()[0] == {"pairs": len(MESSAGES), "backward": backward}
        assert after.sql(BACKWARD).to_pylist()[0] == {"pairs": len(MESSAGES), "backward": 0}
    assert trace.metadata["clock"]["refinement"]["backward_before"] == backward


def test_dask_tasks_apply_the_refined_correction(three):
    trace = open_trace(three)
    sql = "SELECT pe, t0, msg FROM events ORDER BY pe, t0"
    with DuckDBEngine(trace) as eng:
        whole = eng.sql(sql).to_pylist()
    parts = [run_group([str(f)], sql, {}, trace.corrections).to_pylist() for f in trace.files]
    assert [r for part in parts for r in part] == whole


def test_contradicting_messages_are_reported_not_shifted(tmp_path):
    # PE 1's clock jumped: 0 -> 1 says PE 1 must move at least 300 us later, 1 -> 0 at most 100 us
    messages = [(0, 1, 5_000_000, -300_000), (1, 0, 6_000_000, 100_000)]
    ping = {1: (TRUE[1], 400_000)}
    assert _expected_intervals(messages, ping) is None
    rows = _rows(messages)
    for pe in (0, 1):
        _write(tmp_path, pe, rows[pe], _clock(pe, *ping.get(pe, (0, 0))))
    trace = open_trace(tmp_path)
    ref = trace.metadata["clock"]["refinement"]
    assert ref["status"] == "inconsistent" and "not shifted" in ref["detail"]
    assert trace.corrections == file_corrections(trace.files, trace.file_metadata)
    assert trace.metadata["clock"]["final_method"] == "ping_min_rtt"
    text = subprocess.run([bin_path("paradise"), "info", str(tmp_path)], capture_output=True, text=True,
                          timeout=120).stdout
    assert "clock bounds inconsistent" in text


def test_bounds_beyond_the_ping_error_are_inconsistent():
    """Messages that need PE 1 500 us later when its ping allows 400 us: no solution."""
    pairs = [{"src_pe": 0, "dst_pe": 1, "messages": 1, "lead_ns": 500_000, "backward": 1}]
    assert solve(pairs, {0: 0, 1: 400_000}) is None
    assert solve(pairs, {0: 0, 1: 600_000}) == {1: (500_000 + MIN_LATENCY_NS, 600_000)}
    assert solve(pairs, {1: 400_000}) == {1: (-400_000, 400_000)}  # PE 0 without a stated error bounds nothing


def test_info_shows_the_refinement(three):
    proc = subprocess.run([bin_path("paradise"), "info", "--json", str(three)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    clock = json.loads(proc.stdout)["clock"]
    assert clock["refinement"]["status"] == "refined" and set(clock["refinement"]["pes"]) == {"1", "2"}
    text = subprocess.run([bin_path("paradise"), "info", str(three)], capture_output=True, text=True,
                          timeout=120).stdout
    assert "refined by message_bounds" in text and "then ±" in text


def test_merged_file_keeps_the_refined_times(three, tmp_path_factory):
    out = tmp_path_factory.mktemp("merged") / "m.parquet"
    merge_trace(three, out)
    merged = open_trace(out)
    assert merged.corrections == {} and merged.metadata["clock"]["refinement"]["status"] == "refined"
    sql = "SELECT pe, t0, msg FROM events ORDER BY pe, t0, msg"
    with DuckDBEngine(merged) as a, DuckDBEngine(open_trace(three)) as b:
        assert a.sql(sql).to_pylist() == b.sql(sql).to_pylist()
