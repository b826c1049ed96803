"""One analysis run: the trace, its engine, and the results several analyses share.

Every analysis receives the run's Session (`analyze(session, config)`). A shared result (the overview's group table, the
message edges, the exec graph, its critical path, the replayer, ...) is named in SHARED, built
on first use by whichever analysis asks first, and the same object is handed to every later
caller: no analysis takes another code path because another ran first. Each analysis module
declares what it reads in NEEDS, so the runner can start building those results early.
Analyses may run on two threads: each result is built once, later callers wait for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

from paradise.store import TraceHandle


def _overview_groups(s: Session) -> Any:
    return s.engine.query("overview_pe")


def _pe_time(s: Session) -> Any:
    """Each PE's span, busy, idle and other time (overview_pe_time): the one accounting every view reads."""
    from paradise.engines.busy import pe_time

    return pe_time(s.engine, s.get("overview_groups"))


def _communication_edges(s: Session) -> Any:
    """Message edges (communication_edges): the exec graph's bucket steps give them with the graph
    (paradise.events.msgedges)."""
    return s.get("exec_graph").edges


def _object_steps(s: Session) -> Any:
    from paradise.events.objloads import object_steps

    return object_steps(s.engine)


def _exec_graph(s: Session) -> Any:
    from paradise.events.execgraph import materialize

    return materialize(s.engine)


def _latency_fit(s: Session) -> Any:
    """The message cost as fitted on the exec graph (execgraph.latency_samples), before any calibration."""
    from paradise.events.execgraph import fit_latency

    return fit_latency(s.engine, s.get("exec_graph"))


def _not_replayed(s: Session) -> str | None:
    """Why the run is not replayed (too many execs for REPLAY_MAX_EXECS or the budget), None when it is."""
    from paradise.whatif import not_replayed

    return not_replayed(s.get("exec_graph").execs, s.engine)


def _replayer(s: Session) -> Any:
    """The what-if replayer, or None for a trace too large to replay (not_replayed says why)."""
    from paradise import whatif

    if s.get("not_replayed"):  # checked before the graph is read
        return None
    return whatif.Replayer.from_session(s)


def _latency_model(s: Session) -> Any:
    """The message cost: calibrated on the run by the replayer when there is one, else as fitted."""
    rp = s.get("replayer")
    return rp.model if rp is not None else s.get("latency_fit")


def _critical_path(s: Session) -> Any:
    from paradise.events.critpath import critical_path

    return critical_path(s.engine, s.get("exec_graph"))


SHARED: dict[str, Callable[[Session], Any]] = {
    "overview_groups": _overview_groups,
    "pe_time": _pe_time,
    "communication_edges": _communication_edges,
    "object_steps": _object_steps,
    "exec_graph": _exec_graph,
    "latency_fit": _latency_fit,
    "not_replayed": _not_replayed,
    "replayer": _replayer,
    "latency_model": _latency_model,
    "critical_path": _critical_path,
}
"""Shared results by name: how each is built from the session (lazily, once per run)."""


class Session:
    """The trace and engine of one run, and its shared results (see SHARED)."""

    def __init__(self, engine: Any, trace: TraceHandle) -> None:
        self.engine = engine
        self.trace = trace
        self._made: dict[str, Future] = {}
        self._lock = threading.Lock()

    @property
    def pes(self) -> int | None:
        """The PE count the trace's metadata states (None when it does not)."""
        return self.trace.metadata.get("pes")

    def _claim(self, key: str) -> tuple[Future, bool]:
        if key not in SHARED:
            raise KeyError(f"no shared result named {key!r} (known: {', '.join(SHARED)})")
        with self._lock:
            fut = self._made.get(key)
            if fut is not None:
                return fut, False
            fut = self._made[key] = Future()
            return fut, True

    def _make(self, key: str, fut: Future) -> None:
        try:
            fut.set_result(SHARED[key](self))
        except BaseException as exc:  # kept for every caller of the key
            fut.set_exception(exc)

    def get(self, key: str) -> Any:
        """The shared result `key`, built now unless it is built or being built."""
        fut, mine = self._claim(key)
        if mine:
            self._make(key, fut)
        return fut.result()

    def prefetch(self, keys: Iterable[str]) -> None:
        """Starts building each result not yet claimed on a daemon thread (the engine's scans
        release the GIL, so it proceeds while analyses import and compute)."""
        for key in keys:
            fut, mine = self._claim(key)
            if mine:
                threading.Thread(target=self._make, args=(key, fut), name=f"paradise-{key}", daemon=True).start()

    def rollups(self, key: str) -> Any:
        """Stage-2 queries (paradise.engines.rollups) over shared result `key`, a table of a few
        thousand rows registered under its own name; the caller closes them."""
        from paradise.engines.rollups import Rollups

        return Rollups(key, self.get(key))

    def settle(self) -> None:
        """Waits for every result still being built, so the engine is not closed under it."""
        with self._lock:
            pending = list(self._made.values())
        for fut in pending:
            fut.exception()  # waits; a failure was already kept for its callers
