"""The exec graph readers' merges (paradise.events.graphread): quantiles from counts per value
merged over buckets equal DuckDB's quantile_cont over all the values; least-squares moments merged
pairwise equal one fit over all the points."""

from __future__ import annotations

import math

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from paradise.events import graphread


def _bucket_counts(values: np.ndarray, buckets: int, rng: np.random.Generator) -> list[pa.Table]:
    """The values split at random into buckets, each as events_latency_samples' rows of one sample."""
    which = rng.integers(0, buckets, len(values))
    out = []
    for b in range(buckets):
        vals, n = np.unique(values[which == b], return_counts=True)
        out.append(pa.table({"sample": pa.array(["cross"] * len(vals), pa.string()), "value": vals.astype(np.float64),
                             "n": n.astype(np.int64), "total": (vals * n).astype(np.int64)}))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_quantiles_from_merged_counts_are_duckdbs(seed, size):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 50 if seed % 2 else 10**9, size)  # many ties, or nearly none
    counts = graphread.value_counts(_bucket_counts(values, 1 + seed % 4, rng))
    vals, n, total = counts["cross"]
    assert int(n.sum()) == size and total == int(values.sum())
    for q in (0.0, 0.1, 0.5, 0.9, 1.0):
        want = duckdb.sql(f"SELECT quantile_cont(v::DOUBLE, {q}) AS q FROM (SELECT unnest($v) AS v)",
                          params={"v": values.tolist()}).fetchall()[0][0]
        # DuckDB's formula; its build may compute it with a fused multiply-add: equal within an ulp
        assert math.isclose(graphread.quantile_cont(vals, n, q), want, rel_tol=2**-52, abs_tol=0), q
    assert graphread.quantile_cont(np.zeros(0), np.zeros(0, np.int64), 0.5) is None


@pytest.mark.parametrize("buckets", [1, 2, 7])
def test_moments_merged_pairwise_are_one_least_squares_fit(buckets):
    rng = np.random.default_rng(buckets)
    x = rng.integers(0, 1 << 16, 500).astype(np.float64)
    y = 3_000 + 0.25 * x + rng.normal(0, 50, len(x))
    which = rng.integers(0, buckets, len(x))
    con = duckdb.connect()
    rows = []
    for b in range(buckets):
        con.register("t", pa.table({"nbytes": x[which == b], "delay": y[which == b]}))
        rows.append(con.sql("SELECT count(*) AS kept_n, min(nbytes) AS min_bytes, max(nbytes) AS max_bytes, "
                            "avg(nbytes) AS mean_bytes, avg(delay) AS mean_delay, var_pop(nbytes) * count(*) "
                            "AS m2_bytes, covar_pop(delay, nbytes) * count(*) AS c_delay_bytes FROM t").fetchall())
    cols = ("kept_n", "min_bytes", "max_bytes", "mean_bytes", "mean_delay", "m2_bytes", "c_delay_bytes")
    got = graphread.moments([dict(zip(cols, r[0])) for r in rows])
    slope, intercept = np.polyfit(x, y, 1)
    assert got["kept_n"] == len(x) and got["kept_bytes_span"] == x.max() - x.min()
    assert math.isclose(got["slope_ns_per_byte"], slope, rel_tol=1e-9)
    assert math.isclose(got["intercept_ns"], intercept, rel_tol=1e-9)
