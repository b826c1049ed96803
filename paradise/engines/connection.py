"""DuckDB connections with paradise's settings, for the engine and the small queries beside it
(merges of partial results, summaries, roll-ups)."""

from __future__ import annotations

import duckdb


def connect() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with paradise's settings: no progress bar, and every ASOF
    join planned as one (DuckDB turns an ASOF join whose left side it estimates under
    `asof_loop_join_threshold` rows into a nested loop, and its estimates after window functions
    are 1 row: report_bins' innermost-interval join became a quadratic loop)."""
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")
    con.execute("SET asof_loop_join_threshold = 0")
    return con
