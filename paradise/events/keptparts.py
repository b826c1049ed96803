"""Exec-graph partitions kept as Arrow tables in the client's memory instead of Parquet files, up
to an allowance that the budget leaves over (paradise.events.partitions).

An engine that runs the range and bucket steps in its own process (the embedded engine) need not
encode a partition as Parquet only to decode it a step later: a range step keeps its rows of each
bucket while the allowance holds the range, a bucket step takes them back (freeing their bytes) and
keeps its graph rows while the allowance holds them; whatever does not fit goes to files as before.
The allowance is what the budget leaves beside the engine's own share and a reserve for the client's
other work, so a small budget keeps nothing and a large one keeps a 10^7-row trace's graph whole.
"""

from __future__ import annotations

import threading

import pyarrow as pa

from paradise.memory import client_room

RESERVE_BYTES = 1 << 30
"""The part of the budget beside the engine's share that kept partitions leave to the client's other
work (the steps' arrays beyond the engine's share, Arrow results, Python)."""


def allowance(memory_limit: int, engine_share: int) -> int:
    """Bytes of partitions the client may keep under a budget of `memory_limit` bytes of which the
    engine takes `engine_share`: the rest less RESERVE_BYTES (none under a small budget)."""
    return client_room(memory_limit, engine_share, RESERVE_BYTES)


class KeptParts:
    """The kept partitions of one exec-graph build: the range steps' rows by (part, bucket) and range,
    within `allowance` bytes (Arrow's count of the tables' buffers), shared by steps on several
    threads."""

    def __init__(self, allowance: int) -> None:
        self.allowance = int(allowance)
        self.used = 0
        self._rows: dict[tuple[str, int], list[tuple[int, pa.Table, int]]] = {}
        self.graphs: dict[int, pa.Table] = {}
        """The bucket steps' graph rows kept, by bucket."""
        self._lock = threading.Lock()

    def reserve(self, nbytes: int) -> bool:
        """Takes `nbytes` of the allowance if it has them (the caller then keeps tables of that size)."""
        with self._lock:
            if self.used + nbytes > self.allowance:
                return False
            self.used += int(nbytes)
            return True

    def put(self, part: str, bucket: int, i: int, rows: pa.Table, charge: int) -> None:
        """Keeps range i's `rows` of `part` in `bucket`, `charge` bytes of what the caller reserved
        (the pieces of one table share its string dictionaries, which each piece's nbytes counts)."""
        with self._lock:
            self._rows.setdefault((part, int(bucket)), []).append((int(i), rows, int(charge)))

    def take(self, part: str, bucket: int) -> list[tuple[int, pa.Table]]:
        """The kept rows of `part` in `bucket`, as (range, rows) in the order they were kept, no longer
        kept: their charges go back to the allowance."""
        with self._lock:
            rows = self._rows.pop((part, int(bucket)), [])
            self.used = max(0, self.used - sum(c for *_, c in rows))
        return [(i, t) for i, t, _ in rows]

    def keep_graph(self, bucket: int, graph: pa.Table) -> bool:
        """Keeps bucket `bucket`'s graph rows if the allowance holds them; whether it did."""
        if not self.reserve(graph.nbytes):
            return False
        with self._lock:
            self.graphs[int(bucket)] = graph
        return True
