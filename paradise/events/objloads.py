"""Object loads per step: the engine rolls the execs up into one row per object and step
(events_object_step_parts, then events_object_steps: objects as integer ids in the text order of
(coll, index)); the client receives the step matrix, filled from streamed batches, and one row per
object. No side holds a row per event; the embedded engine keeps the rows per object and step in
its database, a Dask run on the client (the tasks' merged parts: no worker holds the event layer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from paradise.engines import load_sql
from paradise.engines.merge import LocalTables

TABLE = "object_steps"
"""The engine table events_object_steps fills (one row per object and step)."""
PARTS, PARTS_QUERY = "object_step_parts", "events_object_step_parts"
"""The relation events_object_steps reads, and the query (split by files) that gives its rows."""
BATCH_ROWS = 1 << 20
"""Object-step rows per streamed batch while the step matrix is filled."""


@dataclass(frozen=True)
class ObjectSteps:
    """The objects of a run and their loads per step."""

    matrix: np.ndarray
    """Step loads (ns, float), one row per oid (0..objects-1), one column per step of `steps`;
    NaN where the object has no exec in that step. An object's execs on several PEs in one step
    are summed."""
    steps: np.ndarray
    """The steps (>= 0) any object ran in, ascending: the matrix's columns."""
    objects: pd.DataFrame
    """One row per oid, in oid order (events_object_summary): coll, index, load_ns, execs,
    step_execs, pe (where its latest exec ran), latest_rows (rows sharing that end)."""
    stepped: bool
    """Whether any exec with a step carries load."""
    rows: pd.DataFrame | None = None
    """The (oid, step) rows (oid, pe, step, load_ns, execs, last_t1), only when some object's
    latest end is tied between two of them (placement then decides its PE from these rows)."""

    @property
    def labels(self) -> pd.DataFrame:
        return self.objects[["coll", "index"]]


def object_steps(engine: Any) -> ObjectSteps:
    """Rolls the run's execs up per object and step (events_object_step_parts, then the object ids
    of events_object_steps), then reads the step matrix (streamed: a batch of rows at a time) and
    the per-object summary. The embedded engine (native_steps) does it all in its database; on an
    engine whose steps run apart (Dask) the parts are tasks over the files, merged on the client,
    where the rest runs over them (one row per object and step, as the matrix holds)."""
    if getattr(engine, "native_steps", False):
        engine.execute(f"CREATE OR REPLACE VIEW {PARTS} AS {load_sql(PARTS_QUERY)}")
        try:
            engine.materialize(TABLE, "events_object_steps")
        finally:
            engine.execute(f"DROP VIEW IF EXISTS {PARTS}")
        return _read(engine)
    tables = LocalTables({PARTS: engine.query(PARTS_QUERY)})
    try:
        tables.materialize(TABLE, "events_object_steps")
        tables.release(PARTS)  # the merged parts are in the table now
        return _read(tables)
    finally:
        tables.close()


def _read(engine: Any) -> ObjectSteps:
    """The object steps from the table TABLE of `engine` (an engine, or LocalTables), dropped after."""
    try:
        objects = engine.query("events_object_summary").to_pandas()
        stepped = bool(engine.query("events_object_stepped").column("stepped")[0].as_py())
        steps = engine.query("events_object_step_numbers").column("step").to_numpy().astype(np.int64)
        matrix = np.full((len(objects), len(steps)), np.nan)
        for batch in engine.batches("events_object_step_loads", batch_rows=BATCH_ROWS):
            oid = batch.column("oid").to_numpy()
            col = np.searchsorted(steps, batch.column("step").to_numpy())
            matrix[oid, col] = batch.column("load_ns").to_numpy()
        rows = None
        if len(objects) and int(objects["latest_rows"].max()) > 1:
            rows = engine.query("events_object_step_rows").to_pandas().astype("int64")
    finally:
        engine.sql(f"DROP TABLE IF EXISTS {TABLE}")
    return ObjectSteps(matrix=matrix, steps=steps, objects=objects, stepped=stepped, rows=rows)


def row_medians(m: np.ndarray) -> np.ndarray:
    """Along the last axis, the median of the non-NaN values (NaN for none), as pandas computes
    it: the middle value, or the mean of the two middle values. A sort, not np.median: numpy's
    SIMD sort is several times faster than the two-point partition np.median uses."""
    if m.shape[-1] == 0:
        return np.full(m.shape[:-1], np.nan)
    srt = np.sort(m, axis=-1)  # NaN last
    k = m.shape[-1] - np.isnan(m).sum(axis=-1)
    lo = np.take_along_axis(srt, (np.maximum(k - 1, 0) // 2)[..., None], axis=-1)[..., 0]
    hi = np.take_along_axis(srt, (k // 2)[..., None], axis=-1)[..., 0]
    return np.where(k > 0, (lo + hi) / 2, np.nan)


def oid_loads(obj: ObjectSteps, med: np.ndarray) -> pd.DataFrame | None:
    """One row per oid (oid, load_ns, execs, pe), as placement.object_loads defines them: with
    steps, the median step load (`med`: row_medians of the matrix) times the steps it ran in, and
    its execs in steps; without, its whole load and execs. None when an object's latest end is
    tied between two of its rows (its PE is then placement.object_loads' to decide, on obj.rows)."""
    o = obj.objects
    if len(o) and int(o["latest_rows"].max()) > 1:
        return None
    if obj.stepped:
        n = (~np.isnan(obj.matrix)).sum(axis=1)  # the steps it ran in
        loads = np.where(n > 0, med * n, 0).astype(np.int64)
        execs = o["step_execs"].to_numpy(np.int64)
    else:
        loads, execs = o["load_ns"].to_numpy(np.int64), o["execs"].to_numpy(np.int64)
    return pd.DataFrame({"oid": o["oid"].to_numpy(np.int64), "load_ns": loads, "execs": execs,
                         "pe": o["pe"].to_numpy(np.int64)})
