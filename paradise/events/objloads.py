"""Object loads per step: the engine rolls the execs up into one row per object and step
(events_object_step_parts, then events_object_steps: objects as integer ids in the text order of
(coll, index)); the client receives one row per object. No side holds a row per event. The embedded
engine's client fills the step matrix from streamed batches; a Dask run keeps the rows per object
and step in object-hash buckets on its workers (paradise.events.objbuckets), whose steps give each
object's median and the windows placement compares, so that its client holds nothing that grows
with the steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from paradise.events import objbuckets
from paradise.events.steploads import MatrixLoads, fill, per_object

__all__ = ["ObjectSteps", "object_steps", "oid_loads"]

TABLE = "object_steps"
"""The engine table events_object_steps fills (one row per object and step)."""
PARTS, PARTS_QUERY = "object_step_parts", "events_object_step_parts"
"""The relation events_object_steps reads, and the query (split by files) that gives its rows."""
BATCH_ROWS = 1 << 20
"""Object-step rows per streamed batch while the step matrix is filled."""


@dataclass(frozen=True)
class ObjectSteps:
    """The objects of a run and their loads per step. The step loads stay where the engine keeps
    them (MatrixLoads, or a Dask run's bucket files): the client holds per-object figures and the
    windows that placement reads, never a matrix that grows with the steps."""

    steps: np.ndarray
    """The steps (>= 0) any object ran in, ascending: the step loads' columns."""
    objects: pd.DataFrame
    """One row per oid, in oid order (events_object_summary): coll, index, load_ns, execs,
    step_execs, pe (where its latest exec ran), latest_rows (rows sharing that end)."""
    stepped: bool
    """Whether any exec with a step carries load."""
    med: np.ndarray
    """Per oid, the median of its step loads (events_object_step_medians; NaN for an object without one)."""
    ran: np.ndarray
    """Per oid, the steps it ran in (has a step load)."""
    loads: Any
    """Where the step loads are: matrix(objects, steps) and windows(oids, med, clip, windows, steps)."""
    rows: pd.DataFrame | None = None
    """The (oid, step) rows (oid, pe, step, load_ns, execs, last_t1), only when some object's
    latest end is tied between two of them (placement then decides its PE from these rows)."""

    @property
    def labels(self) -> pd.DataFrame:
        return self.objects[["coll", "index"]]

    @property
    def matrix(self) -> np.ndarray:
        """Step loads (ns, float), one row per oid, one column per step of `steps`; NaN where the
        object has no exec in that step (an object's execs on several PEs in one step are summed).
        Built whole on request: tests and small traces; placement reads `windows`."""
        return self.loads.matrix(len(self.objects), self.steps)

    def windows(self, oids: np.ndarray, clip: float, windows: int) -> np.ndarray:
        """windowed() of the step loads of `oids` (ascending, each with a step load) over the steps
        any of them ran in: one row per oid, in that order."""
        if not len(oids):
            return np.empty((0, 0))
        oids = np.asarray(oids, np.int64)
        every = int(self.ran[oids].max()) == len(self.steps)  # one of them ran in every step
        return self.loads.windows(oids, self.med[oids], clip, windows, self.steps if every else None)


def object_steps(engine: Any) -> ObjectSteps:
    """Rolls the run's execs up per object and step (events_object_step_parts, kept as a table, then
    the object ids of events_object_steps), then reads the step matrix (streamed: a batch of rows at a time) and
    the per-object summary. The embedded engine (native_steps) does it all in its database; on an
    engine whose steps run apart (Dask) the same queries run per object-hash bucket as its tasks
    (paradise.events.objbuckets) and the client merges their small results."""
    if getattr(engine, "native_steps", False):
        engine.materialize(PARTS, PARTS_QUERY)  # a table: a view is inlined, and aggregated, by each of its two readers
        try:
            engine.materialize(TABLE, "events_object_steps")
        finally:
            engine.execute(f"DROP TABLE IF EXISTS {PARTS}")
        return _read(engine)
    return _from_buckets(engine)


def _from_buckets(engine: Any) -> ObjectSteps:
    """The object steps from object-hash buckets run as engine steps (paradise.events.objbuckets):
    the client keeps the objects, their medians and step counts and the tied rows; the step loads
    stay in the buckets' files (objbuckets.BucketLoads)."""
    parts, objects = objbuckets.bucketed(engine)
    stepped = sum(p.step_load for p in parts) > 0  # events_object_stepped over the buckets' sums
    steps = np.unique(np.concatenate([p.steps for p in parts] + [np.empty(0, np.int64)]))
    med, ran = per_object(pa.concat_tables([p.medians for p in parts]), len(objects))
    tie = bool(len(objects)) and int(objects["latest_rows"].max()) > 1
    rows = [p.rows for p in parts if p.rows is not None] if tie else []
    tied = pa.concat_tables(rows).sort_by([("oid", "ascending"), ("step", "ascending")]).to_pandas().astype("int64") \
        if rows else None
    return ObjectSteps(steps=steps, objects=objects, stepped=stepped, med=med, ran=ran,
                       loads=objbuckets.BucketLoads(engine, tuple(p.loads for p in parts)), rows=tied)


def _read(engine: Any) -> ObjectSteps:
    """The object steps from the table TABLE of the embedded `engine`, dropped after."""
    try:
        objects = engine.query("events_object_summary").to_pandas()
        stepped = bool(engine.query("events_object_stepped").column("stepped")[0].as_py())
        steps = engine.query("events_object_step_numbers").column("step").to_numpy().astype(np.int64)
        med, ran = per_object(engine.query("events_object_step_medians"), len(objects))
        matrix = fill(np.full((len(objects), len(steps)), np.nan), steps,
                      engine.batches("events_object_step_loads", batch_rows=BATCH_ROWS))
        rows = None
        if len(objects) and int(objects["latest_rows"].max()) > 1:
            rows = engine.query("events_object_step_rows").to_pandas().astype("int64")
    finally:
        engine.sql(f"DROP TABLE IF EXISTS {TABLE}")
    return ObjectSteps(steps=steps, objects=objects, stepped=stepped, med=med, ran=ran, loads=MatrixLoads(matrix),
                       rows=rows)


def oid_loads(obj: ObjectSteps, med: np.ndarray) -> pd.DataFrame | None:
    """One row per oid (oid, load_ns, execs, pe), as placement.object_loads defines them: with
    steps, the median step load (`med`: ObjectSteps.med) times the steps it ran in, and
    its execs in steps; without, its whole load and execs. None when an object's latest end is
    tied between two of its rows (its PE is then placement.object_loads' to decide, on obj.rows)."""
    o = obj.objects
    if len(o) and int(o["latest_rows"].max()) > 1:
        return None
    if obj.stepped:
        n = obj.ran  # the steps it ran in
        loads = np.where(n > 0, med * n, 0).astype(np.int64)
        execs = o["step_execs"].to_numpy(np.int64)
    else:
        loads, execs = o["load_ns"].to_numpy(np.int64), o["execs"].to_numpy(np.int64)
    return pd.DataFrame({"oid": o["oid"].to_numpy(np.int64), "load_ns": loads, "execs": execs,
                         "pe": o["pe"].to_numpy(np.int64)})
