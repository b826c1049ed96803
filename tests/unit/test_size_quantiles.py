"""communication_size_quantiles.sql picks the same sizes as DuckDB's quantile_disc (its definition)
while aggregating per distinct size, so it spills under a memory limit where quantile_disc cannot."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from paradise.engines import load_sql


def _run(sizes: list[int | None]) -> dict:
    con = duckdb.connect()
    con.execute("CREATE TABLE events AS SELECT 'send' AS kind, unnest($b)::BIGINT AS bytes", {"b": sizes})
    con.execute("INSERT INTO events VALUES ('exec', 7)")
    cur = con.execute(load_sql("communication_size_quantiles"), {"small_bytes": 100})
    return dict(zip([d[0] for d in cur.description], cur.fetchone()))


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 10, 99, 100, 101, 1000, 4321])
@pytest.mark.parametrize("distinct", [1, 3, 50, 10_000])
def test_picks_equal_quantile_disc(n, distinct):
    rng = np.random.default_rng(n * 7 + distinct)
    sizes = [int(x) for x in rng.integers(0, distinct, n)] + [None] * (n % 3)
    got = _run(sizes)
    known = [s for s in sizes if s is not None]
    con = duckdb.connect()
    want = con.execute("SELECT quantile_disc(b, 0.5), quantile_disc(b, 0.9), quantile_disc(b, 0.99) "
                       "FROM (SELECT unnest($b)::BIGINT AS b)", {"b": known}).fetchone()
    assert (got["p50_bytes"], got["p90_bytes"], got["p99_bytes"]) == want
    assert got["msgs"] == len(sizes) and got["sized_msgs"] == len(known)
    assert got["min_bytes"] == min(known) and got["max_bytes"] == max(known)
    assert got["small_msgs"] == sum(1 for s in known if s <= 100)


def test_no_sized_sends_gives_null_quantiles():
    got = _run([None, None])
    assert got["msgs"] == 2 and got["sized_msgs"] == 0
    assert got["p50_bytes"] is None and got["p99_bytes"] is None and got["max_bytes"] is None
