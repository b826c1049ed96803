"""Stage 2's roll-ups: named queries (paradise/sql/) over a small Arrow table a run already holds
(a shared result of a few thousand rows, never the trace's files), results as numpy arrays."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from paradise.engines import load_sql
from paradise.store.connection import connect


class Rollups:
    """Queries over one Arrow table registered under `table`, on a DuckDB connection of their own.
    Results come back as numpy arrays (masked where a column has nulls) from DuckDB's fetchnumpy,
    never through pyarrow's numpy or pandas conversions: those import pandas, a sixth of a second
    that a first report (`paradise analyze --only overview`) would pay for nothing."""

    def __init__(self, table: str, rows: pa.Table) -> None:
        self.con = connect()
        self.con.register(table, rows)

    def __call__(self, name: str) -> dict[str, np.ndarray]:
        """The rows of paradise/sql/<name>.sql, as numpy arrays by column name."""
        return self.con.sql(load_sql(name)).fetchnumpy()

    def close(self) -> None:
        self.con.close()
